'use strict'
// The pieces of TLS on the TCP inputs that need no socket: which client
// certificate names --tls-allowed-names lets in, which reason a handshake
// error is counted under.
const test = require('node:test')
const assert = require('node:assert/strict')
const { nameAllowed, rejectReason } = require('../../lib/protocols/tls')

const cert = (cn, ...dns) => ({ subject: cn ? { CN: cn } : {}, subjectaltname: dns.map((d) => `DNS:${d}`).join(', ') || undefined })

test('allowed names: exact names without case, * as exactly one leftmost label, CN or DNS SAN', () => {
  assert.equal(nameAllowed(cert('Host.Example.com'), ['host.example.COM']), true)
  assert.equal(nameAllowed(cert('a.example.com'), ['*.example.com']), true)
  assert.equal(nameAllowed(cert('x.a.example.com'), ['*.example.com']), false, 'two labels are not one')
  assert.equal(nameAllowed(cert('example.com'), ['*.example.com']), false, 'zero labels are not one')
  assert.equal(nameAllowed(cert('badexample.com'), ['*.example.com']), false)
  assert.equal(nameAllowed(cert('a.example.com.evil.net'), ['*.example.com']), false)
  assert.equal(nameAllowed(cert('unrelated', 'b.example.com'), ['*.example.com']), true, 'a DNS subject alternative name counts')
  assert.equal(nameAllowed(cert('a.example.com', 'other.net'), ['*.example.com']), false, 'with DNS names the CN does not identify the certificate (RFC 6125)')
  assert.equal(nameAllowed(cert(undefined), ['*.example.com']), false)
  assert.equal(nameAllowed({ subject: { CN: ['a.other.net', 'b.example.com'] } }, ['b.example.com']), true, 'several CNs')
})

test('handshake errors map to a closed set of reasons', () => {
  const err = (code) => Object.assign(new Error(code), { code })
  assert.equal(rejectReason(err('ECONNRESET'), { authorizationError: 'CERT_HAS_EXPIRED' }), 'certificateExpired')
  assert.equal(rejectReason(err('ECONNRESET'), { authorizationError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }), 'unknownCa')
  assert.equal(rejectReason(err('ECONNRESET'), { authorizationError: 'SOMETHING_NEW' }), 'certificateInvalid')
  assert.equal(rejectReason(err('ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE')), 'noClientCertificate')
  assert.equal(rejectReason(err('ERR_SSL_WRONG_VERSION_NUMBER')), 'plaintext')
  assert.equal(rejectReason(err('ERR_SSL_HTTP_REQUEST')), 'plaintext')
  assert.equal(rejectReason(err('ERR_SSL_UNSUPPORTED_PROTOCOL')), 'protocolVersion')
  assert.equal(rejectReason(err('ERR_TLS_HANDSHAKE_TIMEOUT')), 'handshakeTimeout')
  assert.equal(rejectReason(err('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE')), 'peerAlert')
  assert.equal(rejectReason(err('ERR_TLS_CERT_ALTNAME_INVALID')), 'nameMismatch')
  assert.equal(rejectReason(err('ERR_SSL_SOMETHING_ELSE')), 'handshake')
  assert.equal(rejectReason(undefined), 'handshake')
})
