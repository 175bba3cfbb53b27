'use strict'

const net = require('node:net')

/**
 * A TCP proxy on 127.0.0.1 in front of targetHost:targetPort, to make a
 * server unreachable mid-test.
 *
 * - `cut()` / `cut({ mode: 'reset' })`: destroys every open connection and
 *   resets new ones as soon as they arrive (a dead peer).
 * - `cut({ mode: 'hold' })`: destroys every open connection and accepts new
 *   ones without forwarding (a black hole: the client times out). Held
 *   connections are forwarded on `restore()`.
 * - `cut({ mode: 'http' })`: destroys every open or held connection and
 *   answers each new one's first bytes with an HTTP 400, as a web server
 *   on the port would (something that is not the server, answering).
 * - `holdChecks()`: from now on, a client's `hello` (or `isMaster`) that is
 *   not the first message on its connection is held, with what follows it
 *   on that connection: the driver's monitor checks an open connection so,
 *   and waits for the reply; a new connection's handshake still passes.
 *   `heldChecks` counts the connections holding one.
 * - `failNextCommand()`: the next command on an open connection, other
 *   than a check, closes that connection instead of reaching the server
 *   (a connection lost with a write in flight).
 * - `restore()`: forwards again (held messages too). `close()`: stops
 *   listening, drops all.
 *
 * @param {{ targetHost?: string, targetPort: number, host?: string, port?: number }} options
 * @returns {Promise<TcpProxy>}
 */
async function createTcpProxy ({ targetHost = '127.0.0.1', targetPort, host = '127.0.0.1', port = 0 }) {
  const pairs = new Set()
  const held = new Set()
  let cutMode = null
  let checksHeld = false
  let failNext = false

  const forward = (client) => {
    const upstream = net.connect({ host: targetHost, port: targetPort })
    const pair = { client, upstream, messages: 0, pending: Buffer.alloc(0), held: [] }
    pairs.add(pair)
    const drop = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    for (const socket of [client, upstream]) {
      socket.on('error', drop)
      socket.on('close', drop)
    }
    // Client to server by whole wire messages, to hold checks; anything
    // else (TLS) is piped as it comes.
    const onData = (chunk) => {
      pair.pending = Buffer.concat([pair.pending, chunk])
      if (pair.messages === 0 && pair.pending.length >= HEADER && !isWireHeader(pair.pending)) {
        client.off('data', onData)
        client.pause()
        upstream.write(pair.pending)
        client.pipe(upstream)
        return
      }
      while (pair.pending.length >= HEADER && pair.pending.length >= pair.pending.readInt32LE(0)) {
        const message = pair.pending.subarray(0, pair.pending.readInt32LE(0))
        pair.pending = pair.pending.subarray(message.length)
        const first = pair.messages++ === 0
        if (pair.held.length > 0 || (checksHeld && !first && isCheck(message))) pair.held.push(message)
        else if (failNext && !first && !isCheck(message)) {
          failNext = false
          drop()
          return
        } else if (!upstream.write(message)) {
          client.pause()
          upstream.once('drain', () => client.resume())
        }
      }
    }
    client.on('data', onData)
    client.resume()
    upstream.pipe(client)
  }

  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    if (cutMode === 'reset') return client.resetAndDestroy()
    if (cutMode === 'hold') return hold(client)
    if (cutMode === 'http') return answerHttp(client)
    forward(client)
  })

  const hold = (client) => {
    held.add(client)
    client.on('error', () => {})
    client.once('close', () => held.delete(client))
  }

  const answerHttp = (client) => {
    client.on('error', () => {})
    client.once('data', () => client.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'))
    client.resume()
  }

  const dropAll = () => {
    for (const { client, upstream } of pairs) {
      client.destroy()
      upstream.destroy()
    }
    pairs.clear()
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, resolve)
  })

  return {
    address: () => server.address(),
    get uri () { return `mongodb://${host}:${server.address().port}` },
    get connections () { return pairs.size + held.size },
    cut ({ mode = 'reset' } = {}) {
      if (!['reset', 'hold', 'http'].includes(mode)) throw new TypeError(`cut mode must be 'reset', 'hold' or 'http', got ${mode}`)
      cutMode = mode
      dropAll()
      if (mode === 'http') {
        for (const client of held) client.destroy()
        held.clear()
      }
    },
    holdChecks () {
      checksHeld = true
    },
    get heldChecks () { return [...pairs].filter((pair) => pair.held.length > 0).length },
    failNextCommand () {
      failNext = true
    },
    restore () {
      cutMode = null
      checksHeld = false
      failNext = false
      for (const pair of pairs) {
        for (const message of pair.held) pair.upstream.write(message)
        pair.held = []
      }
      for (const client of held) forward(client)
      held.clear()
    },
    close () {
      cutMode = 'reset'
      dropAll()
      for (const client of held) client.destroy()
      held.clear()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}

const HEADER = 16

// A MongoDB message header: a sane length, a request opcode (OP_MSG, OP_QUERY, OP_COMPRESSED).
function isWireHeader (buf) {
  const length = buf.readInt32LE(0)
  return length >= HEADER && length <= 48 * 1000 * 1000 && [2013, 2004, 2012].includes(buf.readInt32LE(12))
}

// An OP_MSG whose command (the first key of its body section) is a monitor's check.
function isCheck (message) {
  if (message.length < 27 || message.readInt32LE(12) !== 2013 || message[20] !== 0) return false
  const end = message.indexOf(0, 26)
  return end > 0 && ['hello', 'isMaster', 'ismaster'].includes(message.toString('latin1', 26, end))
}

/**
 * @typedef {object} TcpProxy
 * @property {() => import('net').AddressInfo} address
 * @property {string} uri mongodb://127.0.0.1:<proxy port>
 * @property {number} connections open or held client connections
 * @property {(options?: { mode?: 'reset'|'hold'|'http' }) => void} cut
 * @property {() => void} holdChecks
 * @property {number} heldChecks connections holding a check
 * @property {() => void} failNextCommand
 * @property {() => void} restore
 * @property {() => Promise<void>} close
 */

module.exports = { createTcpProxy }
