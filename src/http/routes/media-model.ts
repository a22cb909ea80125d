import type { Services } from '../../services.js';
import type { MediaModel, Modality } from '../../catalog/model.js';
import { badRequest, modelNotFound } from '../errors.js';

/** The media model a call names, of the endpoint's modality; a chat model, another modality or an unknown id is the caller's 4xx. */
export function mediaModelFor(services: Services, id: string, modality: Exclude<Modality, 'chat'>): MediaModel {
  const catalog = services.catalog();
  const model = catalog.media(id);
  if (!model) {
    if (catalog.get(id)) throw badRequest(`'${id}' is a chat model: use POST /v1/chat/completions.`, 'model', 'model_not_supported');
    throw modelNotFound(id);
  }
  if (model.modality !== modality) throw badRequest(`'${id}' is a ${model.modality} model, not ${modality === 'image' ? 'an image' : `a ${modality}`} model.`, 'model', 'model_not_supported');
  return model;
}
