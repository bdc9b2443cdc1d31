// Throwaway certificates for tests that need TLS without a broker: a CA, a server certificate for
// localhost / 127.0.0.1 signed by it, a client certificate, and a second CA that signed nothing we
// serve. Made with the openssl CLI at test time so no private key is ever committed.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

export interface Pki {
  dir: string
  /** file paths */
  files: { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string; otherCa: string; otherKey: string }
  /** the same, as PEM text */
  pem: { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string; otherCa: string; otherKey: string }
}

const openssl = (cwd: string, args: string[]) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })

function ca(cwd: string, name: string): void {
  openssl(cwd, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`,
    '-days', '3650', '-subj', `/CN=kafka-edge test ${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])
}

function leaf(cwd: string, name: string, issuer: string, ext: string): void {
  openssl(cwd, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`])
  writeFileSync(path.join(cwd, `${name}.ext`), ext)
  openssl(cwd, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${issuer}.pem`, '-CAkey', `${issuer}.key`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '3650', '-extfile', `${name}.ext`])
}

export function makePki(): Pki {
  const dir = mkdtempSync(path.join(tmpdir(), 'kafka-edge-pki-'))
  ca(dir, 'ca')
  ca(dir, 'other-ca')
  leaf(dir, 'server', 'ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
  leaf(dir, 'client', 'ca', 'extendedKeyUsage=clientAuth\n')
  const files = {
    ca: path.join(dir, 'ca.pem'), serverCert: path.join(dir, 'server.pem'), serverKey: path.join(dir, 'server.key'),
    clientCert: path.join(dir, 'client.pem'), clientKey: path.join(dir, 'client.key'),
    otherCa: path.join(dir, 'other-ca.pem'), otherKey: path.join(dir, 'other-ca.key'),
  }
  const pem = Object.fromEntries(Object.entries(files).map(([k, f]) => [k, readFileSync(f, 'utf8')])) as Pki['pem']
  return { dir, files, pem }
}
