'use strict'
// A MongoDB wire-protocol proxy on 127.0.0.1 in front of a real server that
// answers some commands itself: a stand-in for a server that behaves
// otherwise on those commands (MongoDB 4.2, which refuses `hello`; a
// server that says it is another build), everything else served by the
// real one. Only OP_MSG requests are looked at (drivers send every command
// that way after the handshake, which is OP_QUERY `isMaster`).

const net = require('node:net')
const { BSON } = require('mongodb')

const OP_MSG = 2013
const HEADER_BYTES = 16
// What `answer` gives for a command the proxy neither forwards nor answers:
// its reply never comes (a server that stored and went silent).
const HOLD = Symbol('hold')

/**
 * @param {object} options
 * @param {number} options.targetPort the real server's port
 * @param {string} [options.targetHost='127.0.0.1']
 * @param {string} [options.host='127.0.0.1'] where the proxy listens
 * @param {number} [options.port=0] its port (0: ephemeral)
 * @param {(name: string, command: object) => object|undefined} options.answer
 *   the reply for a command the proxy answers itself (`name` is the
 *   command's first key), undefined to forward it, or HOLD to swallow it
 * @returns {Promise<{ port: number, uri: string, answered: Map<string, number>, close: () => Promise<void> }>}
 */
async function createWireProxy ({ targetPort, targetHost = '127.0.0.1', host = '127.0.0.1', port: listenPort = 0, answer }) {
  const answered = new Map()
  const sockets = new Set()
  let nextRequestId = 1
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: targetHost, port: targetPort })
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => {
        sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    upstream.pipe(client)
    let pending = Buffer.alloc(0)
    client.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0)
        const message = pending.subarray(0, length)
        pending = pending.subarray(length)
        const command = readCommand(message)
        const reply = command && answer(Object.keys(command)[0], command)
        if (reply === HOLD) continue
        if (!reply) {
          upstream.write(message)
          continue
        }
        answered.set(Object.keys(command)[0], (answered.get(Object.keys(command)[0]) || 0) + 1)
        client.write(opMsg(reply, nextRequestId++, message.readInt32LE(4)))
      }
    })
  })
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(listenPort, host, resolve)
  })
  const { port } = server.address()
  return {
    port,
    uri: `mongodb://${host}:${port}`,
    answered,
    close () {
      for (const socket of sockets) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}

// The body (section kind 0) of an OP_MSG request, or null.
function readCommand (message) {
  if (message.length < HEADER_BYTES + 5 || message.readInt32LE(12) !== OP_MSG) return null
  const at = HEADER_BYTES + 4 // after the flag bits
  if (message[at] !== 0) return null
  const size = message.readInt32LE(at + 1)
  return BSON.deserialize(message.subarray(at + 1, at + 1 + size))
}

function opMsg (document, requestId, responseTo) {
  const body = BSON.serialize(document)
  const header = Buffer.alloc(HEADER_BYTES + 5)
  header.writeInt32LE(header.length + body.length, 0)
  header.writeInt32LE(requestId, 4)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(OP_MSG, 12)
  header.writeUInt32LE(0, 16) // flag bits
  header[20] = 0 // section kind: body
  return Buffer.concat([header, body])
}

module.exports = { createWireProxy, HOLD }
