-- Embedding models (POST /v1/embeddings) join the catalog as a fifth modality, `embedding`: an
-- extension value of the `task` filter beside the spec's four (chat, image, video, audio).
alter table models drop constraint models_modality_check;
alter table models add constraint models_modality_check check (modality in ('chat', 'image', 'video', 'audio', 'embedding'));
