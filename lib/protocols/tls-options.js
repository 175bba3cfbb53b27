'use strict'

// Runs in the master (options, protocols) and in the CLI (config checks):
// the TLS options of the TCP protocols, checked once, and their files read.

const fs = require('node:fs')
const crypto = require('node:crypto')
const tls = require('node:tls')
const InvalidOptionError = require('../../exceptions/invalid-option-error')

const TLS_OPTIONS = ['tls', 'tlsCert', 'tlsKey', 'tlsCa', 'tlsAllowedNames']
// A host name pattern: labels of letters, digits, '-' and '_', the leftmost
// one possibly '*' (exactly one label, as rsyslog's PermittedPeer wildcards).
const NAME_PATTERN = /^(\*|[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/i

/** Whether these options ask for TLS (a TLS file or `tls: true`). */
function tlsWanted (options) {
  return Boolean(options.tls || options.tlsCert || options.tlsKey || options.tlsCa)
}

/**
 * Every problem with the TLS options, as `{ option, message }`; the files
 * are read and parsed only when the combination is right. `name(option)`
 * renders another option in a message: `--tls-key` for the CLI,
 * `"tlsKey"` for code.
 * @returns {Array<{ option: string, message: string }>}
 */
function tlsProblems (options, name = (option) => `"${option}"`) {
  const given = TLS_OPTIONS.filter((key) => options[key] !== undefined && options[key] !== false)
  if (given.length === 0) return []
  const { protocol, tlsCert, tlsKey, tlsCa, tlsAllowedNames } = options
  if (protocol === 'udp') return [{ option: given[0], message: `applies to tcp_server and tcp_client only, but ${name('protocol')} is udp` }]
  const problems = []
  if (tlsCert && !tlsKey) problems.push({ option: 'tlsKey', message: `is required with ${name('tlsCert')}` })
  if (tlsKey && !tlsCert) problems.push({ option: 'tlsCert', message: `is required with ${name('tlsKey')}` })
  if (protocol === 'tcp_server' && !tlsCert && !tlsKey) {
    problems.push({ option: 'tlsCert', message: `and ${name('tlsKey')} are required for TLS on tcp_server (the server's certificate and key)` })
  }
  if (tlsAllowedNames !== undefined) problems.push(...allowedNamesProblems(options, name))
  if (problems.length > 0) return problems
  const files = { tlsCert, tlsKey, tlsCa }
  for (const [option, file] of Object.entries(files)) {
    if (file !== undefined && (typeof file !== 'string' || file.length === 0)) problems.push({ option, message: 'must be the path of a PEM file' })
  }
  return problems.length > 0 ? problems : fileProblems(files, name).problems
}

function allowedNamesProblems ({ protocol, tlsCa, tlsAllowedNames }, name) {
  if (protocol !== 'tcp_server') return [{ option: 'tlsAllowedNames', message: 'applies to tcp_server only (the names of client certificates it accepts)' }]
  if (!tlsCa) return [{ option: 'tlsAllowedNames', message: `needs ${name('tlsCa')}: the names are checked on client certificates verified against it` }]
  if (!Array.isArray(tlsAllowedNames) || tlsAllowedNames.length === 0) return [{ option: 'tlsAllowedNames', message: 'must be a non-empty list of names' }]
  const bad = tlsAllowedNames.find((pattern) => typeof pattern !== 'string' || !NAME_PATTERN.test(pattern) || pattern === '*')
  if (bad === undefined) return []
  return [{ option: 'tlsAllowedNames', message: `must be host names, '*' only as a whole leftmost label (*.example.com), got ${JSON.stringify(bad)}` }]
}

// Reads and parses each file: `{ files: { cert, key, ca } (Buffers), problems }`.
function fileProblems ({ tlsCert, tlsKey, tlsCa }, name) {
  const problems = []
  const read = (option, file, parse, what) => {
    if (file === undefined) return undefined
    let data
    try {
      data = fs.readFileSync(file)
    } catch (err) {
      problems.push({ option, message: `cannot read ${file} (${err.code || err.message})` })
      return undefined
    }
    try {
      parse(data)
    } catch {
      problems.push({ option, message: `${file} is not ${what}` })
      return undefined
    }
    return data
  }
  const files = {
    cert: read('tlsCert', tlsCert, (data) => new crypto.X509Certificate(data), 'a PEM certificate'),
    key: read('tlsKey', tlsKey, (data) => crypto.createPrivateKey(data), 'an unencrypted PEM private key'),
    ca: read('tlsCa', tlsCa, (data) => new crypto.X509Certificate(data), 'a PEM certificate (bundle)')
  }
  if (files.cert && files.key) {
    try {
      tls.createSecureContext({ cert: files.cert, key: files.key, ca: files.ca })
    } catch (err) {
      problems.push({ option: 'tlsKey', message: `does not go with the certificate in ${name('tlsCert')} (${err.reason || err.message})` })
    }
  }
  return { files, problems }
}

/**
 * The TLS files read now (at start and at each restart, so that renewed
 * files are picked up): `{ cert, key, ca }` Buffers, undefined where not
 * given. Throws InvalidOptionError on the first problem.
 */
function loadTlsFiles (options) {
  const { files, problems } = fileProblems(options, (option) => `"${option}"`)
  if (problems.length > 0) throw new InvalidOptionError(problems[0].option, options[problems[0].option], problems[0].message)
  return files
}

/**
 * Throws InvalidOptionError on the first TLS problem (LoadBalancer options,
 * already copied: `tlsAllowedNames` given as 'a,b' becomes a list).
 */
function checkTlsOptions (options) {
  if (typeof options.tlsAllowedNames === 'string') options.tlsAllowedNames = options.tlsAllowedNames.split(',').map((name) => name.trim())
  options.tls = Boolean(options.tls)
  const [problem] = tlsProblems(options)
  if (problem) throw new InvalidOptionError(problem.option, options[problem.option], problem.message)
}

module.exports = { TLS_OPTIONS, tlsWanted, tlsProblems, checkTlsOptions, loadTlsFiles }
