/**
 * A custom certificate checked before it is stored: PEM the gateway can serve, a key that is the
 * certificate's, and a certificate that covers the gateway's services (`*.{domain}`). Each
 * refusal names its field.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { ServerClientError } from '@dstack/core';

function refuse(field: string, message: string): never {
  throw new ServerClientError(`certificate.${field}: ${message}`, {
    fields: [['configuration', 'certificate', field]],
  });
}

export function checkCustomCertificate(certificatePem: string, privateKeyPem: string, domain: string): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certificatePem);
  } catch (error) {
    refuse('certificate', `not a PEM certificate (${(error as Error).message})`);
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (error) {
    refuse('private_key', `not a PEM private key (${(error as Error).message})`);
  }
  if (!certificate.checkPrivateKey(key)) refuse('private_key', 'is not the key of the certificate');
  // Any name under the wildcard domain stands for every service's.
  const sample = `dstack-service.${domain.replace(/^\*\./, '').replace(/\$\{\{\s*run\.project_name\s*\}\}/g, 'project')}`;
  if (certificate.checkHost(sample) === undefined) {
    refuse(
      'certificate',
      `does not cover *.${domain} (its subject: ${certificate.subject.replace(/\n/g, ', ')})`,
    );
  }
  if (Date.parse(certificate.validTo) < Date.now())
    refuse('certificate', `expired on ${certificate.validTo}`);
}
