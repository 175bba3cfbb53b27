'use strict'

// Runs in the master: TLS for the TCP protocols. The server side takes
// sockets tcp-server.js accepted (and counted per source) and performs the
// handshake on them; the client side connects out. Refused handshakes are
// counted in events.tlsRejected by reason and logged at most once per
// LogLimiter interval per reason.

const net = require('node:net')
const tls = require('node:tls')
const { X509Certificate } = require('node:crypto')
const LogLimiter = require('../shared/log-limiter')
const { printable } = require('../shared/printable-text')
const { loadTlsFiles } = require('./tls-options')

const MIN_VERSION = 'TLSv1.2'

// Certificate verification results (OpenSSL's X509_V_ERR_* names as Node
// reports them) and handshake errors, to the reasons counted. The reasons
// are a closed set: a peer cannot invent counter names.
const VERIFY_REASONS = {
  CERT_HAS_EXPIRED: 'certificateExpired',
  CERT_NOT_YET_VALID: 'certificateNotYetValid',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'unknownCa',
  UNABLE_TO_GET_ISSUER_CERT: 'unknownCa',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'unknownCa',
  SELF_SIGNED_CERT_IN_CHAIN: 'unknownCa',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'unknownCa',
  CERT_SIGNATURE_FAILURE: 'unknownCa',
  ERR_TLS_CERT_ALTNAME_INVALID: 'nameMismatch'
}
const HANDSHAKE_REASONS = {
  ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE: 'noClientCertificate',
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'noClientCertificate',
  ERR_SSL_UNSUPPORTED_PROTOCOL: 'protocolVersion',
  ERR_SSL_NO_PROTOCOLS_AVAILABLE: 'protocolVersion',
  ERR_SSL_VERSION_TOO_LOW: 'protocolVersion',
  ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION: 'protocolVersion',
  // Not a TLS record at all: a plaintext client on the TLS port.
  ERR_SSL_WRONG_VERSION_NUMBER: 'plaintext',
  ERR_SSL_HTTP_REQUEST: 'plaintext',
  ERR_SSL_HTTPS_PROXY_REQUEST: 'plaintext',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'plaintext',
  ERR_SSL_UNKNOWN_PROTOCOL: 'plaintext',
  ERR_TLS_HANDSHAKE_TIMEOUT: 'handshakeTimeout',
  ECONNRESET: 'aborted',
  EPIPE: 'aborted'
}

/**
 * The reason a handshake failed. `socket.authorizationError` is set when
 * Node refused the peer's certificate after OpenSSL finished (the error
 * itself then only says the socket closed).
 */
function rejectReason (err, socket) {
  const code = (socket && socket.authorizationError) || (err && err.code)
  if (VERIFY_REASONS[code]) return VERIFY_REASONS[code]
  if (HANDSHAKE_REASONS[code]) return HANDSHAKE_REASONS[code]
  if (typeof code === 'string' && /^ERR_SSL_(TLSV1|SSLV3)_ALERT_/.test(code)) return 'peerAlert'
  if (socket && socket.authorizationError) return 'certificateInvalid'
  return 'handshake'
}

// One limiter per balancer context: it outlives listeners reopened after
// errors and the reconnects of a tcp_client.
const limiters = new WeakMap()

/**
 * Counts a refused handshake and logs it (rate-limited per reason);
 * `detail`: what else the line says (the error code, the names presented).
 */
function refuse (ctx, reason, peer, detail) {
  ctx.count('tlsRejected', reason)
  let limiter = limiters.get(ctx)
  if (!limiter) limiters.set(ctx, (limiter = new LogLimiter()))
  limiter.log(ctx.logger, 'warn', reason, { remote: peer, reason, ...detail }, `TLS handshake with ${peer} refused: ${reason}`)
}

function errorDetail (err, socket) {
  return { error: printable((socket && socket.authorizationError) || (err && (err.code || err.message))) }
}

/**
 * Whether a verified client certificate carries a name the patterns allow:
 * its subject CN or a DNS subject alternative name, compared without case;
 * '*' as the leftmost pattern label stands for exactly one label.
 */
function nameAllowed (cert, patterns) {
  const names = certificateNames(cert).map((name) => name.toLowerCase())
  return patterns.some((pattern) => {
    const p = pattern.toLowerCase()
    if (!p.startsWith('*.')) return names.includes(p)
    return names.some((name) => name.endsWith(p.slice(1)) && name.length > p.length - 1 && !name.slice(0, name.length - p.length + 1).includes('.'))
  })
}

/**
 * The names of a peer certificate (getPeerCertificate()): its DNS subject
 * alternative names, or its subject CN when it has none (RFC 6125 §6.4.4:
 * a certificate with DNS names is not identified by its CN).
 */
function certificateNames (cert) {
  const dns = cert && cert.subjectaltname
    ? cert.subjectaltname.split(', ').filter((entry) => entry.startsWith('DNS:')).map((entry) => entry.slice(4))
    : []
  if (dns.length > 0) return [...new Set(dns)]
  return cert && cert.subject ? [].concat(cert.subject.CN || []) : []
}

// minVersion here too: setSecureContext() on reload replaces the context,
// and one without it would fall back to Node's default minimum.
function serverContextOptions (files) {
  return { cert: files.cert, key: files.key, ...(files.ca ? { ca: files.ca } : {}), minVersion: MIN_VERSION }
}

// The TCP socket tcp-server.js accepted under a TLS socket the server made
// of it (Node keeps it as the TLS socket's parent).
function rawSocketOf (socket) {
  return socket._parent || null
}

// The remote address of a socket whose handshake failed; the TLS socket
// may already be closed, the TCP socket under it cached its address.
function peerOf (socket) {
  const raw = rawSocketOf(socket)
  return socket.remoteAddress || (raw && raw.remoteAddress) || 'unknown'
}

/**
 * The TLS side of tcp_server: `handshake(rawSocket)` takes an accepted TCP
 * socket through the handshake, `onSecure(tlsSocket, rawSocket)` gets each
 * one that succeeded (a verified client certificate with an allowed name,
 * when tlsCa is given). A handshake that fails or is not done within
 * tlsHandshakeTimeout is counted and its socket closed: Node reports a
 * timed-out handshake but leaves the socket open, and with it the sender's
 * connection slot. `reload()` re-reads the files for new connections.
 */
function createTlsAcceptor (ctx, onSecure) {
  const { options } = ctx
  const files = loadTlsFiles(options)
  const verify = Boolean(files.ca)
  // Never listens: tcp-server.js accepts and hands sockets over with
  // emit('connection'), so that per-source limits apply before a handshake.
  const server = tls.createServer({
    ...serverContextOptions(files),
    requestCert: verify,
    rejectUnauthorized: verify,
    handshakeTimeout: options.tlsHandshakeTimeout
  })
  server.on('tlsClientError', (err, socket) => {
    refuse(ctx, rejectReason(err, socket), peerOf(socket), errorDetail(err, socket))
    socket.destroy()
  })
  server.on('secureConnection', (socket) => {
    const cert = options.tlsAllowedNames && socket.getPeerCertificate()
    if (cert && !nameAllowed(cert, options.tlsAllowedNames)) {
      // The names are the peer's text: escaped (printable-text.js), as JSON leaves C1 and bidi raw in the log file.
      refuse(ctx, 'nameNotAllowed', peerOf(socket), { names: printable(certificateNames(cert).join(',').slice(0, 200)) })
      return socket.destroy()
    }
    onSecure(socket, rawSocketOf(socket))
  })
  logCertificate(ctx.logger, files, 'TLS certificate in use')
  return {
    handshake: (socket) => server.emit('connection', socket),
    reload () {
      const renewed = loadTlsFiles(options)
      server.setSecureContext(serverContextOptions(renewed))
      logCertificate(ctx.logger, renewed, 'TLS certificate reloaded; new connections use it')
    }
  }
}

function logCertificate (logger, files, msg) {
  try {
    const cert = new X509Certificate(files.cert)
    logger.info({ subject: cert.subject, issuer: cert.issuer, validTo: cert.validTo, clientCertificates: files.ca ? 'required' : 'not asked for' }, msg)
  } catch {} // checked when the options were; nothing to add here
}

/**
 * tcp_client over TLS: connects, verifies the server against tlsCa (or
 * Node's bundled CAs), presents tlsCert/tlsKey when given. Resolves with
 * the socket once the handshake succeeded; a refused handshake is counted.
 */
function connectTls (ctx) {
  const files = loadTlsFiles(ctx.options)
  const { host, port } = ctx
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
      ...(net.isIP(host) ? {} : { servername: host }),
      ...(files.ca ? { ca: files.ca } : {}),
      ...(files.cert ? { cert: files.cert, key: files.key } : {}),
      minVersion: MIN_VERSION
    })
    let connected = false
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error('TLS handshake timeout'), { code: 'ERR_TLS_HANDSHAKE_TIMEOUT' })), ctx.options.tlsHandshakeTimeout)
    const onError = (err) => {
      clearTimeout(timer)
      if (connected) refuse(ctx, rejectReason(err), `${host}:${port}`, errorDetail(err))
      reject(err)
    }
    socket.once('connect', () => { connected = true })
    socket.once('error', onError)
    socket.once('secureConnect', () => {
      clearTimeout(timer)
      socket.removeListener('error', onError)
      // With TLS 1.3 the server judges our certificate after our side of
      // the handshake is done: its refusal arrives as an alert.
      socket.once('error', (err) => { if (/^ERR_SSL_/.test(err.code)) refuse(ctx, rejectReason(err), `${host}:${port}`, errorDetail(err)) })
      resolve(socket)
    })
  })
}

module.exports = { createTlsAcceptor, connectTls, rejectReason, nameAllowed, MIN_VERSION }
