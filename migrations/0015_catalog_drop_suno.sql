-- Suno left the catalog's vendors (replaced by Stability AI): it has no official developer API, so its
-- one model was never callable. The catalog sync keeps the rows of models that leave the seed, which
-- would leave this one under a provider no `provider=` filter accepts, so it is deleted here (its price
-- rows with it). Tasks name their model as text: past tasks stay readable. A call naming it is
-- 404 model_not_found, as for any unknown id.
delete from models m where m.id = 'suno/suno-v5.5' and not exists (select 1 from models a where a.alias_of = m.id);
