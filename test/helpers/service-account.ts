/** A Google service account key file, as the JSON a test hands the gateway (VERTEX_SA, a BYOK row): project `proj-1`. */
export function serviceAccountKeyFile(privateKey: string, clientEmail: string, tokenUri: string): Record<string, string> {
  return {
    type: 'service_account', project_id: 'proj-1', private_key_id: 'key-1', private_key: privateKey,
    client_email: clientEmail, client_id: '1', token_uri: tokenUri,
  };
}
