'use strict'

const { test } = require('node:test')
const assert = require('node:assert')
const net = require('node:net')
const { EventEmitter } = require('node:events')
const { HeartbeatWatch, splitAddress } = require('../../lib/mongo/heartbeat-watch')

const quiet = { warn () {}, info () {}, error () {} }
const described = (client, address, type) => client.emit('serverDescriptionChanged', { address, newDescription: { type } })

test('heartbeat watch: a polling check of an Unknown server without reply past the limit is stuck; an answered, failed, streaming or known server\'s is not', () => {
  const client = new EventEmitter()
  const watch = new HeartbeatWatch({ logger: quiet, uri: 'mongodb://a:1' })
  watch.watch(client)
  const t0 = Date.now()
  for (const address of ['a:1', 'b:2', 'c:3', 'd:4']) described(client, address, 'Unknown')
  described(client, 'g:7', 'Standalone')
  client.emit('serverHeartbeatStarted', { connectionId: 'a:1', awaited: false })
  client.emit('serverHeartbeatStarted', { connectionId: 'b:2', awaited: false })
  client.emit('serverHeartbeatStarted', { connectionId: 'c:3', awaited: true })
  client.emit('serverHeartbeatStarted', { connectionId: 'd:4', awaited: false })
  client.emit('serverHeartbeatStarted', { connectionId: 'g:7', awaited: false }) // its server is known: nothing waits on it
  client.emit('serverHeartbeatSucceeded', { connectionId: 'b:2' })
  client.emit('serverHeartbeatFailed', { connectionId: 'd:4' })
  assert.deepStrictEqual(watch.stuck(t0 + 1000, 5000), [])
  assert.deepStrictEqual(watch.stuck(t0 + 6000, 5000), ['a:1'])
  described(client, 'a:1', 'Standalone')
  assert.deepStrictEqual(watch.stuck(t0 + 6000, 5000), [], 'known again')
  described(client, 'a:1', 'Unknown')
  client.emit('serverHeartbeatStarted', { connectionId: 'a:1', awaited: true }) // now streaming: waits by design
  assert.deepStrictEqual(watch.stuck(t0 + 6000, 5000), [])
  const next = new EventEmitter() // the connection's client replaced: the old one's checks are forgotten
  watch.watch(next)
  client.emit('serverHeartbeatStarted', { connectionId: 'e:5', awaited: false })
  described(client, 'e:5', 'Unknown')
  assert.deepStrictEqual(watch.stuck(t0 + 60000, 5000), [])
  described(next, 'f:6', 'Unknown')
  next.emit('serverHeartbeatStarted', { connectionId: 'f:6', awaited: false })
  assert.deepStrictEqual(watch.stuck(Date.now() + 6000, 5000), ['f:6'])
})

// A server that answers `hello` with a MongoDB reply header (what lib/mongo/not-mongo.js asks).
async function answeringServer (t) {
  const server = net.createServer((socket) => socket.once('data', (request) => {
    const reply = Buffer.alloc(21)
    reply.writeInt32LE(21, 0)
    reply.writeInt32LE(1, 4)
    reply.writeInt32LE(request.readInt32LE(4), 8) // responseTo: the request's id
    reply.writeInt32LE(2013, 12)
    socket.end(reply)
  }))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => server.close())
  return `127.0.0.1:${server.address().port}`
}

test('heartbeat watch: a stuck client whose server answers is closed and connected again, the connect retried until it succeeds', async (t) => {
  const address = await answeringServer(t)
  const calls = []
  let failures = 2
  const client = Object.assign(new EventEmitter(), {
    options: { tls: false },
    close: async () => { calls.push('close') },
    connect: async () => {
      calls.push('connect')
      if (failures-- > 0) throw new Error('Server selection timed out after 5000 ms')
    }
  })
  const lines = []
  const watch = new HeartbeatWatch({ logger: { warn: (fields, msg) => lines.push(msg) }, uri: 'mongodb://x' })
  watch.watch(client)
  described(client, address, 'Unknown')
  client.emit('serverHeartbeatStarted', { connectionId: address, awaited: false })
  watch.check()
  assert.strictEqual(watch.reconnecting, null, 'not stuck yet: nothing done')
  watch.started.set(address, Date.now() - 6000) // its check began 6 s ago
  watch.check()
  await watch.reconnecting
  assert.deepStrictEqual(calls, ['close', 'connect', 'connect', 'connect'])
  assert.strictEqual(watch.reconnects, 1)
  assert.match(lines[0], new RegExp(`^database answers at ${address}, but the driver's check`))
  assert.match(lines[1], /reconnect failed \(Server selection timed out after 5000 ms\); trying again in 500 ms/)
  watch.started.set(address, Date.now() - 6000)
  described(client, address, 'Unknown')
  watch.check()
  assert.strictEqual(watch.reconnecting, null, 'not again within 30 s')
})

test('heartbeat watch: a stuck check of a server that does not answer us either is an outage, not reconnected; stop() ends a reconnect under way', async (t) => {
  const closed = net.createServer()
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const refused = `127.0.0.1:${closed.address().port}`
  await new Promise((resolve) => closed.close(resolve))
  const calls = []
  const client = Object.assign(new EventEmitter(), { options: { tls: false }, close: async () => calls.push('close'), connect: async () => calls.push('connect') })
  const watch = new HeartbeatWatch({ logger: quiet, uri: 'mongodb://x' })
  watch.watch(client)
  described(client, refused, 'Unknown')
  watch.started.set(refused, Date.now() - 6000)
  watch.check()
  await watch.reconnecting
  assert.deepStrictEqual(calls, [], 'nothing answers there: nothing reconnected')
  const address = await answeringServer(t)
  let connects = 0
  client.connect = async () => { connects++; throw new Error('down') }
  described(client, address, 'Unknown')
  watch.started.set(address, Date.now() - 6000)
  watch.check()
  await new Promise((resolve) => setTimeout(resolve, 700)) // a connect failed, a second after 500 ms
  await watch.stop()
  assert.strictEqual(watch.reconnecting, null)
  const after = connects
  await new Promise((resolve) => setTimeout(resolve, 1200))
  assert.strictEqual(connects, after, 'no connect after stop()')
  assert.ok(after >= 1)
})

test('driver addresses split into host and port, IPv6 in brackets', () => {
  assert.deepStrictEqual(splitAddress('127.0.0.1:27017'), { host: '127.0.0.1', port: 27017 })
  assert.deepStrictEqual(splitAddress('db.example.net:27018'), { host: 'db.example.net', port: 27018 })
  assert.deepStrictEqual(splitAddress('[::1]:27017'), { host: '::1', port: 27017 })
  assert.strictEqual(splitAddress('no-port'), null)
})
