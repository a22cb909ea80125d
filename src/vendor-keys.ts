/**
 * Why `apiKey` cannot be `vendor`'s credential, if it cannot: Kling signs a token with the secret key
 * for each call, so both keys travel in the one setting (`<access key>:<secret key>`). Read by the
 * environment (config.ts) and the routing file alike; imports nothing.
 */
export function vendorKeyProblem(vendor: string, apiKey: string): string | undefined {
  return vendor === 'kuaishou' && !/^[^:\s]+:[^:\s]+$/.test(apiKey) ? 'must be <access key>:<secret key>' : undefined;
}
