'use strict'
// Certificates made by the real `openssl` CLI into a temporary directory:
// two unrelated CAs, server and client certificates, an expired one. Each
// entity is `{ cert, key }` (file paths); CAs also have `ca` (= cert).
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const DAY_FORMAT = (date) => date.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'

function openssl (dir, args) {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
}

/** A self-signed CA named `cn`, files `<name>.pem` / `<name>.key`. */
function makeCa (dir, name, cn) {
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '3650', '-subj', `/CN=${cn}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])
  return { name, cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`), ca: path.join(dir, `${name}.pem`) }
}

/**
 * A certificate for `cn` signed by `ca`, with DNS/IP subject alternative
 * names `san` (e.g. ['DNS:localhost', 'IP:127.0.0.1']) and the usage of a
 * 'server' or a 'client'. `notBefore`/`notAfter` (Date) make expired or
 * not-yet-valid ones: `openssl ca` takes explicit dates, `x509 -req` does not.
 */
function makeCert (dir, ca, name, { cn, san = [], usage = 'server', notBefore, notAfter } = {}) {
  const ext = path.join(dir, `${name}.ext`)
  fs.writeFileSync(ext, [
    '[v3]',
    'basicConstraints=CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
    ...(san.length ? [`subjectAltName=${san.join(',')}`] : [])
  ].join('\n') + '\n')
  openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.csr`, '-utf8', '-subj', `/CN=${cn}`])
  if (notBefore || notAfter) signWithDates(dir, ca, name, ext, notBefore, notAfter)
  else {
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial',
      '-out', `${name}.pem`, '-days', '365', '-extfile', ext, '-extensions', 'v3'])
  }
  return { name, cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) }
}

function signWithDates (dir, ca, name, ext, notBefore, notAfter) {
  const db = path.join(dir, `${name}-db`)
  fs.mkdirSync(db, { recursive: true })
  fs.writeFileSync(path.join(db, 'index.txt'), '')
  fs.writeFileSync(path.join(db, 'serial'), `${Date.now().toString(16).padStart(16, '0')}\n`)
  const conf = path.join(dir, `${name}-ca.cnf`)
  fs.writeFileSync(conf, [
    '[ca]', 'default_ca=testca', '[testca]', `dir=${db}`, 'database=$dir/index.txt', 'serial=$dir/serial',
    'new_certs_dir=$dir', 'default_md=sha256', 'policy=any', 'copy_extensions=none', 'unique_subject=no',
    '[any]', 'commonName=supplied'
  ].join('\n') + '\n')
  openssl(dir, ['ca', '-batch', '-config', conf, '-in', `${name}.csr`, '-cert', ca.cert, '-keyfile', ca.key,
    '-out', `${name}.pem`, '-notext', '-extfile', ext, '-extensions', 'v3',
    '-startdate', DAY_FORMAT(notBefore), '-enddate', DAY_FORMAT(notAfter)])
}

/**
 * The set the TLS tests use, in a fresh temporary directory (removed by
 * `cleanup()`): `ca`, `otherCa`, `server` (localhost, 127.0.0.1), `client`
 * (client.example.com), `otherClient` (intruder.example.net, same CA),
 * `expiredClient`, `strangerClient` (signed by otherCa), and `newServer`
 * (signed by otherCa: a renewed certificate from a new CA).
 */
function makeTlsFixtures (prefix = 'tls-fixtures-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const ca = makeCa(dir, 'ca', 'Collector Test CA')
  const otherCa = makeCa(dir, 'other-ca', 'Unrelated Test CA')
  const server = makeCert(dir, ca, 'server', { cn: 'localhost', san: ['DNS:localhost', 'IP:127.0.0.1'] })
  const client = makeCert(dir, ca, 'client', { cn: 'client.example.com', san: ['DNS:client.example.com'], usage: 'client' })
  const otherClient = makeCert(dir, ca, 'other-client', { cn: 'intruder.example.net', san: ['DNS:intruder.example.net'], usage: 'client' })
  const expiredClient = makeCert(dir, ca, 'expired-client', {
    cn: 'client.example.com', san: ['DNS:client.example.com'], usage: 'client',
    notBefore: new Date('2020-01-01T00:00:00Z'), notAfter: new Date('2021-01-01T00:00:00Z')
  })
  const strangerClient = makeCert(dir, otherCa, 'stranger-client', { cn: 'client.example.com', san: ['DNS:client.example.com'], usage: 'client' })
  const newServer = makeCert(dir, otherCa, 'new-server', { cn: 'localhost', san: ['DNS:localhost', 'IP:127.0.0.1'] })
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true })
  return { dir, ca, otherCa, server, client, otherClient, expiredClient, strangerClient, newServer, cleanup }
}

module.exports = { makeTlsFixtures, makeCa, makeCert }
