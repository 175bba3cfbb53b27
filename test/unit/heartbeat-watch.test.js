'use strict'

const { test } = require('node:test')
const assert = require('node:assert')
const { EventEmitter } = require('node:events')
const { HeartbeatWatch, splitAddress } = require('../../workers/storage/heartbeat-watch')

test('heartbeat watch: a polling check without reply past the limit is stuck; an answered, failed or streaming one is not', () => {
  const client = new EventEmitter()
  const watch = new HeartbeatWatch({ logger: console, uri: 'mongodb://a:1' })
  watch.watch(client)
  const t0 = Date.now()
  client.emit('serverHeartbeatStarted', { connectionId: 'a:1', awaited: false })
  client.emit('serverHeartbeatStarted', { connectionId: 'b:2', awaited: false })
  client.emit('serverHeartbeatStarted', { connectionId: 'c:3', awaited: true })
  client.emit('serverHeartbeatStarted', { connectionId: 'd:4', awaited: false })
  client.emit('serverHeartbeatSucceeded', { connectionId: 'b:2' })
  client.emit('serverHeartbeatFailed', { connectionId: 'd:4' })
  assert.deepStrictEqual(watch.stuck(t0 + 1000, 5000), [])
  assert.deepStrictEqual(watch.stuck(t0 + 6000, 5000), ['a:1'])
  client.emit('serverHeartbeatStarted', { connectionId: 'a:1', awaited: true }) // now streaming: waits by design
  assert.deepStrictEqual(watch.stuck(t0 + 6000, 5000), [])
  const next = new EventEmitter() // the connection's client replaced: the old one's checks are forgotten
  watch.watch(next)
  client.emit('serverHeartbeatStarted', { connectionId: 'e:5', awaited: false })
  assert.deepStrictEqual(watch.stuck(t0 + 60000, 5000), [])
  next.emit('serverHeartbeatStarted', { connectionId: 'f:6', awaited: false })
  assert.deepStrictEqual(watch.stuck(Date.now() + 6000, 5000), ['f:6'])
})

test('driver addresses split into host and port, IPv6 in brackets', () => {
  assert.deepStrictEqual(splitAddress('127.0.0.1:27017'), { host: '127.0.0.1', port: 27017 })
  assert.deepStrictEqual(splitAddress('db.example.net:27018'), { host: 'db.example.net', port: 27018 })
  assert.deepStrictEqual(splitAddress('[::1]:27017'), { host: '::1', port: 27017 })
  assert.strictEqual(splitAddress('no-port'), null)
})
