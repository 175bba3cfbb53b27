'use strict'
// Shared helpers of the core runtime tests: start a balancer that is always
// stopped after the test, wait on a condition (bounded, never a timing
// assertion), and send UDP datagrams / TCP bytes to it.
const path = require('node:path')
const dgram = require('node:dgram')
const net = require('node:net')
const { once } = require('node:events')
const { LoadBalancer } = require('../..')
const { accountedFor } = require('../../lib/master/counters')
const { waitFor } = require('./wait-for')

const FIXTURES = path.join(__dirname, '..', 'fixtures')
const COUNTING = fixture('counting-worker.js')
const HOST = '127.0.0.1'

function fixture (name) {
  return path.join(FIXTURES, name)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check()` (may be async) until it returns a truthy value; throws after `timeout` ms. */

/** A started LoadBalancer (counting fixture unless `worker` is given), stopped by t.after. */
async function startLb (t, options = {}, Class = LoadBalancer) {
  const lb = new Class({ worker: COUNTING, instances: 2, port: 0, host: HOST, retryDelay: 50, ...options })
  t.after(() => lb.stop())
  await lb.start()
  return lb
}

/** Stats once every received message is accounted for (nothing in flight). */
function settled (lb, what = 'every message to be processed') {
  return waitFor(() => {
    const s = lb.summary()
    return accountedFor(s) && s
  }, { what })
}

/** A UDP socket bound to an ephemeral loopback port, closed by t.after. */
async function udpSocket (t) {
  const socket = dgram.createSocket('udp4')
  t.after(() => new Promise((resolve) => socket.close(resolve)).catch(() => {}))
  socket.bind(0, HOST)
  await once(socket, 'listening')
  return socket
}

function sendDatagram (socket, port, data) {
  return new Promise((resolve, reject) => socket.send(data, port, HOST, (err) => err ? reject(err) : resolve()))
}

/**
 * Sends `messages` in chunks, waiting after each chunk until the balancer
 * has received everything sent so far, so the kernel never drops one.
 */
async function sendPaced (lb, socket, messages, { chunk = 50 } = {}) {
  const base = lb.summary().received
  for (let i = 0; i < messages.length; i += chunk) {
    const part = messages.slice(i, i + chunk)
    for (const data of part) await sendDatagram(socket, lb.address().port, data)
    const expected = base + i + part.length
    await waitFor(() => lb.summary().received >= expected, { what: `${expected} datagrams received` })
  }
}

/** A TCP client connected to `port`, destroyed by t.after. */
async function tcpClient (t, port) {
  const socket = net.connect({ host: HOST, port })
  t.after(() => socket.destroy())
  await once(socket, 'connect')
  return socket
}

function write (socket, data) {
  return new Promise((resolve, reject) => socket.write(data, (err) => err ? reject(err) : resolve()))
}

/** Sums a field of every worker's custom stats. */
async function customTotal (lb, field) {
  const { workers } = await lb.stats()
  return workers.reduce((sum, w) => sum + (w.custom ? w.custom[field] : 0), 0)
}

const lines = (n, prefix = 'm') => Array.from({ length: n }, (_, i) => `${prefix}${i}`)

module.exports = {
  HOST,
  COUNTING,
  fixture,
  sleep,
  waitFor,
  startLb,
  settled,
  udpSocket,
  sendDatagram,
  sendPaced,
  tcpClient,
  write,
  customTotal,
  lines
}
