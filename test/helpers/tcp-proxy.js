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
 * - `restore()`: forwards again. `close()`: stops listening, drops all.
 *
 * @param {{ targetHost?: string, targetPort: number, host?: string, port?: number }} options
 * @returns {Promise<TcpProxy>}
 */
async function createTcpProxy ({ targetHost = '127.0.0.1', targetPort, host = '127.0.0.1', port = 0 }) {
  const pairs = new Set()
  const held = new Set()
  let cutMode = null

  const forward = (client) => {
    const upstream = net.connect({ host: targetHost, port: targetPort })
    const pair = { client, upstream }
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
    client.pipe(upstream)
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
    restore () {
      cutMode = null
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

/**
 * @typedef {object} TcpProxy
 * @property {() => import('net').AddressInfo} address
 * @property {string} uri mongodb://127.0.0.1:<proxy port>
 * @property {number} connections open or held client connections
 * @property {(options?: { mode?: 'reset'|'hold'|'http' }) => void} cut
 * @property {() => void} restore
 * @property {() => Promise<void>} close
 */

module.exports = { createTcpProxy }
