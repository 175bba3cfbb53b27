'use strict'

// Sends `collector verify`'s sample messages to the collector on
// 127.0.0.1: one UDP datagram each (from one socket, kept across the
// collector's restarts: one sender, one scope of kept state), or one TCP
// frame each in the listener's framing. Paced at a bounded rate, and never
// in the last second of a UTC minute (nor the first quarter second of the
// next): the master stamps a message with the time it received its batch,
// which verify does not know to the millisecond, and a per-minute key
// computed from it must be the same whichever moment it was.

const dgram = require('node:dgram')
const net = require('node:net')
const CollectorError = require('../../exceptions/collector-error')

const HOST = '127.0.0.1'
const TICK_MS = 10
/** How much earlier and later than its sending the master may stamp a message (ms): see expectation.js. */
const SPREAD = Object.freeze({ before: 250, after: 1000 })
const MINUTE_MS = 60000

// A TCP frame of `data` in each named framing of lib/protocols/framing.js.
const FRAMERS = {
  newline: (data) => Buffer.concat([data, Buffer.from('\n')]),
  'octet-counting': (data) => Buffer.concat([Buffer.from(`${data.length} `), data]),
  auto: (data) => Buffer.concat([Buffer.from(`${data.length} `), data]),
  'length-prefixed': (data) => Buffer.concat([uint(data.length, 4), data]),
  'length-prefixed:32': (data) => Buffer.concat([uint(data.length, 4), data]),
  'length-prefixed:16': (data) => Buffer.concat([uint(data.length, 2), data]),
  hep: (data) => data // a HEP packet carries its own length
}

function uint (n, bytes) {
  const out = Buffer.alloc(bytes)
  out.writeUIntBE(n, 0, bytes)
  return out
}

/**
 * @param {{ protocol: string, framing?: string }} listen the collector's listener (its config)
 * @returns {{ send(port, messages, { rate }): Promise<Array<{ at: number, rinfo?: object, remote?: object }>>, close(): void }}
 */
function createSender ({ protocol, framing = 'newline' }) {
  if (protocol === 'udp') return udpSender()
  if (protocol === 'tcp_server') {
    if (!FRAMERS[framing]) throw new CollectorError(`collector verify sends TCP frames in the framings ${Object.keys(FRAMERS).join(', ')}; this collector's is ${typeof framing === 'function' ? 'a function' : framing}`, 'ERR_USAGE')
    return tcpSender(FRAMERS[framing], framing)
  }
  throw new CollectorError(`collector verify sends to a listener (udp or tcp_server); this collector's protocol is ${protocol}`, 'ERR_USAGE')
}

function udpSender () {
  const socket = dgram.createSocket('udp4')
  const bound = new Promise((resolve, reject) => {
    socket.once('error', reject)
    socket.bind(0, HOST, () => resolve(socket.address().port))
  })
  const sendOne = (port, data) => new Promise((resolve, reject) => socket.send(data, port, HOST, (err) => err ? reject(err) : resolve()))
  return {
    async send (port, messages, { rate }) {
      const local = await bound
      return paced(messages, rate, async (data) => {
        await sendOne(port, data)
        return { rinfo: { address: HOST, family: 'IPv4', port: local, size: data.length } }
      })
    },
    close () { socket.close() }
  }
}

// One connection per collector run (a killed master takes its connection
// with it); the model sees each message from the connection it came on.
function tcpSender (frame, framing) {
  let connection = null
  return {
    async send (port, messages, { rate }) {
      if (framing === 'newline' && messages.some((data) => data.includes(0x0a))) throw new CollectorError('a sample message holds a newline: the collector\'s newline framing would split it', 'ERR_USAGE')
      if (!connection || connection.port !== port || connection.socket.destroyed) connection = await connect(port)
      const { socket } = connection
      const remote = { address: HOST, port: socket.localPort }
      return paced(messages, rate, (data) => new Promise((resolve, reject) => socket.write(frame(data), (err) => err ? reject(err) : resolve({ remote }))))
    },
    close () { if (connection) connection.socket.end() }
  }
}

function connect (port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: HOST, port }, () => resolve({ socket, port }))
    socket.once('error', reject)
    socket.on('error', () => {}) // a master killed on purpose resets it
  })
}

/**
 * Sends `messages` in order at most `rate` a second, none in the last
 * SPREAD.after ms of a minute or the first SPREAD.before of the next;
 * resolves with when each was sent and from where.
 */
async function paced (messages, rate, sendOne) {
  const sent = []
  const perTick = Math.max(1, Math.round(rate * TICK_MS / 1000))
  let anchor = { time: Date.now(), index: 0 } // the pace counts from here (again after a pause)
  for (let i = 0; i < messages.length; i++) {
    const pause = minuteEndPause(Date.now())
    if (pause > 0) {
      await sleep(pause)
      anchor = { time: Date.now(), index: i }
    } else if (i % perTick === 0) {
      const due = anchor.time + ((i - anchor.index) / rate) * 1000
      if (due > Date.now()) await sleep(due - Date.now())
    }
    const from = await sendOne(messages[i])
    sent.push({ at: Date.now(), ...from })
  }
  return sent
}

// How long to wait before sending at `now`: the rest of the minute's last
// SPREAD.after ms and of the next one's first SPREAD.before ms, or 0.
function minuteEndPause (now) {
  const into = now % MINUTE_MS
  const margin = 20 // a send's own time
  if (into >= MINUTE_MS - SPREAD.after - margin) return MINUTE_MS - into + SPREAD.before + margin
  if (into < SPREAD.before + margin) return SPREAD.before + margin - into
  return 0
}

function sleep (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

module.exports = { createSender, SPREAD }
