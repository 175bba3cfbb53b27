'use strict'

// Whether what listens where a MongoDB URI points is MongoDB. The driver
// cannot tell: a port taken by another program that accepts and stays
// silent reads to it as a timeout ("server selection timed out", a write
// stalled), one that answers garbage as a connection error, and it may keep
// reporting an older cause (ECONNREFUSED) meanwhile. Asked here directly:
// a TCP (or TLS) connection, then one `hello` in the wire protocol (OP_MSG),
// whose reply must carry a MongoDB message header answering it.
// Runs wherever a URI is used: the master (resolveMongo) and the workers.

const net = require('node:net')
const tls = require('node:tls')

const OP_MSG = 2013
const OP_REPLY = 1
const HEADER = 16
const MAX_MESSAGE = 48 * 1000 * 1000
const REQUEST_ID = 0x6e6f6d67

/** The one line said of host:port when something there is not MongoDB. */
function notMongoLine (where) {
  return `${where} accepts connections but does not answer as MongoDB (another program has the port?)`
}

/** The line said of host:port when it accepts and says nothing: a stalled server as much as another program. */
function silentLine (where, timeoutMs) {
  return `${where} accepts connections but answers nothing within ${timeoutMs} ms (a MongoDB stalled or overloaded, or another program that says nothing)`
}

// { hello: 1, $db: 'admin' } as BSON, in an OP_MSG (one kind-0 section).
function helloMessage () {
  const doc = Buffer.concat([
    Buffer.from([0x10]), Buffer.from('hello\0'), int32(1),
    Buffer.from([0x02]), Buffer.from('$db\0'), int32(6), Buffer.from('admin\0'),
    Buffer.from([0x00])
  ])
  const body = Buffer.concat([int32(0), Buffer.from([0]), int32(doc.length + 4), doc])
  return Buffer.concat([int32(HEADER + body.length), int32(REQUEST_ID), int32(0), int32(OP_MSG), body])
}

function int32 (n) {
  const b = Buffer.alloc(4)
  b.writeInt32LE(n)
  return b
}

// A reply header: a sane length, answering our request, a reply opcode.
function answersAsMongo (head) {
  const length = head.readInt32LE(0)
  const opCode = head.readInt32LE(12)
  return length > HEADER && length <= MAX_MESSAGE && head.readInt32LE(8) === REQUEST_ID && (opCode === OP_MSG || opCode === OP_REPLY)
}

/**
 * What listens on host:port: 'none' (no connection within timeoutMs, or
 * one closed without a byte), 'mongodb' (a MongoDB reply to hello),
 * 'other' (it accepted, then answered garbage) or 'silent' (it accepted,
 * then answered nothing within timeoutMs: a MongoDB stalled, SIGSTOPped or
 * overloaded reads so too, not only another program).
 * @param {{ host: string, port: number, tls?: boolean, timeoutMs?: number }} target
 * @returns {Promise<'none'|'mongodb'|'other'|'silent'>}
 */
function probeWire ({ host, port, tls: secure = false, timeoutMs = 2000 }) {
  return new Promise((resolve) => {
    const options = { host, port, servername: net.isIP(host) ? undefined : host, rejectUnauthorized: false }
    const socket = secure ? tls.connect(options) : net.connect(options)
    let connected = false
    let received = Buffer.alloc(0)
    const done = (verdict) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(verdict)
    }
    const timer = setTimeout(() => done(connected ? (received.length > 0 ? 'other' : 'silent') : 'none'), timeoutMs)
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      connected = true
      socket.write(helloMessage())
    })
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk])
      if (received.length >= HEADER) done(answersAsMongo(received) ? 'mongodb' : 'other')
    })
    // Closed or reset without a byte: a peer gone (or a proxy with no
    // upstream), not a program answering in our place.
    const closed = () => done(received.length > 0 ? 'other' : 'none')
    socket.once('error', closed)
    socket.once('end', closed)
  })
}

/**
 * The hosts of a `mongodb://` URI and whether it asks for TLS; none for
 * `mongodb+srv://` (its hosts are in DNS, the driver's to find).
 * @param {string} uri
 * @returns {{ hosts: Array<{ host: string, port: number }>, tls: boolean }}
 */
function uriHosts (uri) {
  const match = /^mongodb:\/\/(?:[^@/?#]*@)?([^/?#]+)(?:\/[^?#]*)?(?:\?([^#]*))?/.exec(String(uri || ''))
  if (!match) return { hosts: [], tls: false }
  const hosts = match[1].split(',').map((item) => {
    const at = /^\[([^\]]+)\](?::(\d+))?$/.exec(item) || /^([^:]+)(?::(\d+))?$/.exec(item)
    return at && { host: decodeURIComponent(at[1]), port: Number(at[2] || 27017) }
  }).filter(Boolean)
  const params = new URLSearchParams(match[2] || '')
  return { hosts, tls: /^true$/i.test(params.get('tls') || params.get('ssl') || '') }
}

/**
 * notMongoLine for the first host of `uri` that accepts connections and
 * answers as something else, else silentLine for the first that answers
 * nothing; null when each is MongoDB, or nothing listens there.
 * @param {string} uri
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<string|null>}
 */
async function findNotMongo (uri, { timeoutMs = 2000 } = {}) {
  const { hosts, tls: secure } = uriHosts(uri)
  const verdicts = await Promise.all(hosts.map((h) => probeWire({ ...h, tls: secure, timeoutMs })))
  const other = verdicts.indexOf('other')
  const index = other >= 0 ? other : verdicts.indexOf('silent')
  if (index < 0) return null
  const { host, port } = hosts[index]
  const where = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`
  return other >= 0 ? notMongoLine(where) : silentLine(where, timeoutMs)
}

module.exports = { notMongoLine, silentLine, probeWire, uriHosts, findNotMongo }
