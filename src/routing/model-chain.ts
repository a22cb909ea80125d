import { ApiError, badRequest, modelNotFound } from '../http/errors.js';
import { MAX_MODELS_PER_CALL } from './limits.js';
import type { VirtualModel } from './targets.js';

/** A catalog model as a chain needs it: its id (an alias resolves to its model). */
interface ChainModel {
  readonly id: string;
}

/**
 * The catalog models a call may be served by, in the order they are tried: `model` (a virtual
 * model's list in its place), then each of `models` (likewise), each model once. An id the caller
 * named that the catalog lacks is a 404 naming it; an id a virtual model lists that the catalog no
 * longer has is left out (the operator's list may outlive a retired model), and a virtual model with
 * none left is a 404 as an unknown model is.
 */
export function modelChain<M extends ChainModel>(model: string, models: readonly string[] | null | undefined, find: (id: string) => M | undefined,
  virtualModels: Readonly<Record<string, VirtualModel>> | undefined): M[] {
  const chain: M[] = [];
  const add = (id: string, param: string) => {
    const virtual = virtualModels?.[id];
    if (virtual) {
      const known = virtual.models.map(find).filter((found): found is M => found !== undefined);
      if (known.length === 0) throw notFoundAt(id, param);
      for (const found of known) if (!chain.some((entry) => entry.id === found.id)) chain.push(found);
      return;
    }
    const found = find(id);
    if (!found) throw notFoundAt(id, param);
    if (!chain.some((entry) => entry.id === found.id)) chain.push(found);
  };
  add(model, 'model');
  models?.forEach((id, i) => add(id, `models[${i}]`));
  if (chain.length > MAX_MODELS_PER_CALL) {
    throw badRequest(`One call tries at most ${MAX_MODELS_PER_CALL} models; 'model' and 'models' name ${chain.length} (virtual models counted by the models they list).`, 'models');
  }
  return chain;
}

function notFoundAt(id: string, param: string): ApiError {
  const error = modelNotFound(id);
  return param === 'model' ? error : new ApiError(error.status, error.code, error.message, param);
}
