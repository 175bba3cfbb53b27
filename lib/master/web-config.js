'use strict'

// Runs in the master (and in the CLI, to check the flag): reads the web
// configuration file of the metrics endpoint, in the format of the
// Prometheus exporter toolkit (`tls_server_config`, `basic_auth_users`), so
// that a file written for an exporter works here. Everything is checked
// when read; what is read is what the endpoint serves with.

const crypto = require('node:crypto')
const fs = require('node:fs')
const path = require('node:path')
const yaml = require('js-yaml')
const WebConfigError = require('../../exceptions/web-config-error')
const { closestName } = require('../shared/closest-name')

// Keys of the toolkit's format that we do not implement: refused by name
// rather than ignored, since ignoring a security setting is worse than
// refusing the file.
const TOP_KEYS = ['tls_server_config', 'basic_auth_users']
const TOP_UNSUPPORTED = ['http_server_config', 'rate_limit']
const TLS_KEYS = ['cert_file', 'key_file', 'client_ca_file', 'client_auth_type', 'min_version', 'max_version']
const TLS_UNSUPPORTED = ['cert', 'key', 'client_ca', 'client_allowed_sans', 'cipher_suites', 'prefer_server_cipher_suites', 'curve_preferences']

/**
 * The toolkit's client_auth_type values (Go's tls.ClientAuthType) as Node
 * server options; `check` is enforced when the connection is established,
 * for the two policies Node's options cannot say by themselves; `verify`:
 * the policy verifies certificates, against client_ca_file (required).
 */
const CLIENT_AUTH = Object.freeze({
  NoClientCert: { requestCert: false, rejectUnauthorized: false, check: null, verify: false },
  RequestClientCert: { requestCert: true, rejectUnauthorized: false, check: null, verify: false },
  RequireAnyClientCert: { requestCert: true, rejectUnauthorized: false, check: 'present', verify: false },
  VerifyClientCertIfGiven: { requestCert: true, rejectUnauthorized: false, check: 'validIfPresent', verify: true },
  RequireAndVerifyClientCert: { requestCert: true, rejectUnauthorized: true, check: null, verify: true }
})
// TLS 1.0 and 1.1 are refused, as on the TCP inputs: deprecated (RFC 8996).
const TLS_VERSIONS = Object.freeze({ TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' })
// $2a$, $2b$ and $2y$ (htpasswd, PHP) are the same algorithm; cost 04-31.
const BCRYPT = /^\$2[aby]\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/

/**
 * Reads and checks a web config file. Paths in it are relative to its
 * directory. Throws WebConfigError with a one-line reason.
 * @param {string} file
 * @returns {{ file: string, tls: null | { cert: Buffer, key: Buffer, ca?: Buffer, clientAuth: string, minVersion: string, maxVersion: string }, users: Map<string, string> }}
 */
function loadWebConfig (file) {
  const absolute = path.resolve(file)
  const fail = (detail) => { throw new WebConfigError(absolute, detail) }
  const doc = parseYaml(readText(absolute, 'the file', fail), fail)
  if (doc !== null && (typeof doc !== 'object' || Array.isArray(doc))) fail('must be a YAML mapping with tls_server_config and/or basic_auth_users')
  const top = doc || {}
  checkKeys(top, TOP_KEYS, TOP_UNSUPPORTED, '', fail)
  const tls = readTls(top.tls_server_config, path.dirname(absolute), fail)
  const users = readUsers(top.basic_auth_users, fail)
  return Object.freeze({ file: absolute, tls, users })
}

function readText (file, what, fail) {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch (err) {
    return fail(`cannot read ${what} (${err.code || err.message})`)
  }
}

function parseYaml (text, fail) {
  try {
    const doc = yaml.load(text, { schema: yaml.CORE_SCHEMA })
    return doc === undefined ? null : doc
  } catch (err) {
    const where = err.mark ? ` at line ${err.mark.line + 1}, column ${err.mark.column + 1}` : ''
    return fail(`not valid YAML${where}: ${err.reason || err.message.split('\n')[0]}`)
  }
}

function checkKeys (object, known, unsupported, prefix, fail) {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue
    if (unsupported.includes(key)) fail(`${prefix}${key} is not supported here (only ${known.join(', ')})`)
    const closest = closestName(key, known)
    fail(`${prefix}${key} is not a known key${closest ? `; did you mean ${prefix}${closest}?` : ` (known: ${known.join(', ')})`}`)
  }
}

function readTls (section, dir, fail) {
  if (section === null || section === undefined) return null
  if (typeof section !== 'object' || Array.isArray(section)) fail('tls_server_config must be a mapping')
  checkKeys(section, TLS_KEYS, TLS_UNSUPPORTED, 'tls_server_config.', fail)
  for (const key of Object.keys(section)) {
    if (typeof section[key] !== 'string' || section[key] === '') fail(`tls_server_config.${key} must be a non-empty string`)
  }
  if (!section.cert_file) fail('tls_server_config.cert_file is missing (the server certificate, PEM)')
  if (!section.key_file) fail('tls_server_config.key_file is missing (the private key of cert_file, PEM)')
  const clientAuth = section.client_auth_type || 'NoClientCert'
  if (!Object.hasOwn(CLIENT_AUTH, clientAuth)) fail(`tls_server_config.client_auth_type must be one of ${Object.keys(CLIENT_AUTH).join(', ')}, got ${JSON.stringify(clientAuth)}`)
  if (section.client_ca_file && clientAuth === 'NoClientCert') fail('tls_server_config.client_ca_file is set but client_auth_type is NoClientCert: set client_auth_type: RequireAndVerifyClientCert')
  // Without a CA of its own, Node would verify client certificates against
  // its bundled public roots: any publicly issued certificate would pass.
  if (!section.client_ca_file && CLIENT_AUTH[clientAuth].verify) fail(`tls_server_config.client_ca_file is missing: client_auth_type ${clientAuth} verifies client certificates against it (the CA that signs your clients' certificates, PEM)`)
  const minVersion = tlsVersion(section.min_version || 'TLS12', 'min_version', fail)
  const maxVersion = tlsVersion(section.max_version || 'TLS13', 'max_version', fail)
  if (minVersion > maxVersion) fail(`tls_server_config.min_version ${section.min_version} is above max_version ${section.max_version}`)
  const file = (key) => path.resolve(dir, section[key])
  const pem = (key) => Buffer.from(readText(file(key), `tls_server_config.${key} ${file(key)}`, fail))
  const tls = { cert: pem('cert_file'), key: pem('key_file'), clientAuth, minVersion, maxVersion }
  if (section.client_ca_file) tls.ca = pem('client_ca_file')
  checkPem(tls, fail)
  return Object.freeze(tls)
}

function tlsVersion (name, key, fail) {
  if (Object.hasOwn(TLS_VERSIONS, name)) return TLS_VERSIONS[name]
  const obsolete = name === 'TLS10' || name === 'TLS11' ? ' (TLS 1.0 and 1.1 are refused: deprecated by RFC 8996)' : ''
  return fail(`tls_server_config.${key} must be TLS12 or TLS13, got ${JSON.stringify(name)}${obsolete}`)
}

// The certificate, the key and the CA parse, and the key is the
// certificate's: found now, not at the first scrape.
function checkPem ({ cert, key, ca }, fail) {
  let x509
  let privateKey
  try { x509 = new crypto.X509Certificate(cert) } catch (err) { fail(`tls_server_config.cert_file is not a PEM certificate (${err.message})`) }
  try { privateKey = crypto.createPrivateKey(key) } catch (err) { fail(`tls_server_config.key_file is not an unencrypted PEM private key (${err.message})`) }
  if (!x509.checkPrivateKey(privateKey)) fail('tls_server_config.key_file is not the private key of cert_file')
  if (ca) {
    try { new crypto.X509Certificate(ca) } catch (err) { fail(`tls_server_config.client_ca_file is not a PEM certificate (${err.message})`) } // eslint-disable-line no-new -- built only to check that the PEM parses
  }
}

function readUsers (section, fail) {
  const users = new Map()
  if (section === null || section === undefined) return users
  if (typeof section !== 'object' || Array.isArray(section)) fail('basic_auth_users must be a mapping of user name to bcrypt hash')
  for (const [user, hash] of Object.entries(section)) {
    if (user === '' || user.includes(':')) fail(`basic_auth_users: user name ${JSON.stringify(user)} cannot be used in HTTP basic auth (empty, or contains ":")`)
    // The value is never echoed: a hash is still a secret worth keeping out of logs.
    if (typeof hash !== 'string' || !BCRYPT.test(hash)) fail(`basic_auth_users.${user} is not a bcrypt hash ($2y$10$ and 53 more characters; make one with: htpasswd -nBC 10 "" | tr -d ':\\n')`)
    users.set(user, hash)
  }
  return users
}

module.exports = { loadWebConfig, CLIENT_AUTH }
