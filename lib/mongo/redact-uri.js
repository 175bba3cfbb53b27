'use strict'

const { InvalidOptionError } = require('../../exceptions')

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i
// query options whose values are secrets too
const SECRET_OPTIONS = /([?&](?:tlsCertificateKeyFilePassword|sslPass)=)[^&]*/gi
const AWS_TOKEN = /(AWS_SESSION_TOKEN(?::|%3A))[^,&]*/gi

/**
 * Splits a connection string into scheme, userinfo and the rest. The
 * userinfo ends at the last '@' before the query, so a password holding an
 * unescaped '@' or '/' is still cut out whole.
 * @param {string} uri
 * @returns {{ scheme: string, userinfo: string|null, rest: string }|null}
 */
function splitUri (uri) {
  const scheme = SCHEME.exec(uri)
  if (!scheme) return null
  const afterScheme = uri.slice(scheme[0].length)
  const queryAt = afterScheme.indexOf('?')
  const beforeQuery = queryAt === -1 ? afterScheme : afterScheme.slice(0, queryAt)
  const at = beforeQuery.lastIndexOf('@')
  if (at === -1) return { scheme: scheme[0], userinfo: null, rest: afterScheme }
  return { scheme: scheme[0], userinfo: afterScheme.slice(0, at), rest: afterScheme.slice(at + 1) }
}

/**
 * The URI with its password (and secret options) replaced by `***`, safe
 * for logs and error messages: mongodb://user:***@host/db.
 * Anything that does not parse as a URI is fully masked.
 * @param {string} uri
 * @returns {string}
 */
function redactUri (uri) {
  if (typeof uri !== 'string') return String(uri)
  const parts = splitUri(uri)
  if (!parts) return uri.includes('@') ? '***' : uri
  const rest = parts.rest.replace(SECRET_OPTIONS, '$1***').replace(AWS_TOKEN, '$1***')
  if (parts.userinfo === null) return parts.scheme + rest
  const colon = parts.userinfo.indexOf(':')
  const user = colon === -1 ? parts.userinfo : `${parts.userinfo.slice(0, colon)}:***`
  return `${parts.scheme}${user}@${rest}`
}

/**
 * The servers a connection string names, without credentials, path or
 * options: `host1:27017,host2:27017` (as written), `srv:cluster0.example.net`
 * for a mongodb+srv URI; null for anything that does not parse. What the
 * disk buffer records of its destination (never a password).
 * @param {string} uri
 * @returns {string|null}
 */
function uriHosts (uri) {
  const parts = typeof uri === 'string' ? splitUri(uri) : null
  if (!parts) return null
  const hosts = parts.rest.split(/[/?#]/, 1)[0]
  return /^mongodb\+srv:/i.test(parts.scheme) ? `srv:${hosts}` : hosts
}

/**
 * True when the URI carries a password in its userinfo or a secret option.
 * @param {string} uri
 * @returns {boolean}
 */
function hasPassword (uri) {
  const parts = typeof uri === 'string' ? splitUri(uri) : null
  if (!parts) return false
  if (parts.rest.search(SECRET_OPTIONS) !== -1 || parts.rest.search(AWS_TOKEN) !== -1) return true
  if (parts.userinfo === null) return false
  const colon = parts.userinfo.indexOf(':')
  return colon !== -1 && colon < parts.userinfo.length - 1
}

/**
 * Throws when a URI given on the command line or in options holds a
 * password: argv shows in `ps` and ends up in logs. Credentials belong in
 * the MONGODB_URI environment variable.
 * @param {string} uri
 * @param {string} [option='uri'] name of the flag/option, for the message
 * @throws {InvalidOptionError} code ERR_INVALID_OPTION; message and `value` hold the redacted URI
 */
function assertNoPassword (uri, option = 'uri') {
  if (!hasPassword(uri)) return
  throw new InvalidOptionError(option, redactUri(uri),
    'must not contain a password (command lines are visible in ps and logs); ' +
    'put the URI in the MONGODB_URI environment variable instead')
}

/** An error's message with any connection string in it redacted (driver messages may quote one). */
function redactMessage (err) {
  return String((err && err.message) || err).replace(/mongodb(\+srv)?:\/\/\S+/g, (uri) => redactUri(uri))
}

module.exports = { redactUri, redactMessage, hasPassword, assertNoPassword, uriHosts }
