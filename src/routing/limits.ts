/**
 * Models one call may try at most: a request's `model` and `models` together, virtual models
 * expanded. Its own module, imported by the request schemas, so that they import nothing else of routing.
 */
export const MAX_MODELS_PER_CALL = 8;
