'use strict'

// Every message carries its own arrival time to its worker, not its
// batch's: two messages sent GAP_MS apart that share one batch (batchDelay
// far longer than the gap) reach doWork with arrival times at least that
// far apart, the first no earlier than it was sent, and the batch's own
// time is its first message's. Over each receive path: the native UDP
// receiver (the kernel's time), node:dgram, and TCP (when the chunk holding
// a frame's last bytes was read).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { HOST, fixture, sleep, startLb, settled, udpSocket, sendDatagram, tcpClient, waitFor } = require('../helpers/lb')

const RECORDER = fixture('datagram-recorder-worker.js')
const GAP_MS = 150
const BATCH_DELAY_MS = 800

async function records (lb) {
  const stats = await lb.stats()
  return stats.workers.flatMap((w) => w.custom.records)
}

// `kernel`: arrival times the kernel stamped (the native receiver), exact
// whatever the master was doing; else the time the master read it, which
// a busy loop delays: the first's read may come late (ci1: 4 ms, so 146 ms
// apart), the second's never before it was sent.
function assertOwnArrivals (got, sentAt, kernel = false) {
  assert.equal(got.length, 2)
  const [first, second] = got
  assert.equal(first.batchId, second.batchId, 'both messages in one batch')
  assert.equal(typeof first.receivedAt, 'number', 'a message carries its arrival time')
  // Date.now() is whole ms, the kernel's time has a fraction: allow the ms.
  assert.ok(first.receivedAt >= sentAt - 1, `the first arrived (${first.receivedAt}) once sent (${sentAt})`)
  assert.ok(second.receivedAt - sentAt >= GAP_MS - 1, `the second, sent ${GAP_MS} ms after the first, arrived ${second.receivedAt - sentAt} ms after it was (the first ${first.receivedAt - sentAt} ms)`)
  if (kernel) assert.ok(second.receivedAt - first.receivedAt >= GAP_MS - 1, `sent ${GAP_MS} ms apart, they arrived ${second.receivedAt - first.receivedAt} ms apart`)
  assert.equal(first.batchReceivedAt, first.receivedAt, 'the batch arrived with its first message')
}

for (const receiver of ['native', 'dgram']) {
  test(`${receiver}: two datagrams of one batch each arrive at their own time`, async (t) => {
    const lb = await startLb(t, { instances: 1, worker: RECORDER, udpReceiver: receiver, batchDelay: BATCH_DELAY_MS })
    const socket = await udpSocket(t)
    const sentAt = Date.now()
    await sendDatagram(socket, lb.address().port, Buffer.from('first'))
    await sleep(GAP_MS)
    await sendDatagram(socket, lb.address().port, Buffer.from('second'))
    await settled(lb)
    const got = await records(lb)
    assert.deepEqual(got.map((r) => r.head), ['first', 'second'])
    assertOwnArrivals(got, sentAt, receiver === 'native')
  })
}

test('tcp: two frames of one batch each arrive when their last bytes did', async (t) => {
  const lb = await startLb(t, { instances: 1, worker: RECORDER, protocol: 'tcp_server', batchDelay: BATCH_DELAY_MS })
  const client = await tcpClient(t, lb.address().port)
  const sentAt = Date.now()
  client.write('fir')
  await sleep(GAP_MS / 3)
  client.write('st\nsec')
  await waitFor(() => lb.summary().received === 1, { what: 'the first frame' })
  await sleep(GAP_MS)
  client.write('ond\n')
  await settled(lb)
  const got = await records(lb)
  assert.deepEqual(got.map((r) => [r.head, r.remote.address]), [['first', HOST], ['second', HOST]])
  assertOwnArrivals(got, sentAt + GAP_MS / 3)
})
