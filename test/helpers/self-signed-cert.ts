/**
 * A self-signed certificate for 127.0.0.1 and localhost (openssl, EC P-256, one day), for a test's TLS
 * servers: the mock vendor playing a cloud over HTTPS, a hostile upstream a BYOK row's https base_url
 * names. The gateway trusts it through NODE_EXTRA_CA_CERTS=`certPath`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SelfSignedCert {
  readonly key: Buffer;
  readonly cert: Buffer;
  /** The certificate's file, for NODE_EXTRA_CA_CERTS. */
  readonly certPath: string;
  /** A directory of the test's own (the certificate is in it), removed by `remove`. */
  readonly dir: string;
  remove(): void;
}

export function selfSignedCert(name: string): SelfSignedCert {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-keyout', keyPath, '-out', certPath, '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  return { key: readFileSync(keyPath), cert: readFileSync(certPath), certPath, dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
