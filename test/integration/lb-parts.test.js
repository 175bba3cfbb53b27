'use strict'

// A balancer's parts(buf, start, end): a message split into parts in the
// master, each distributed by its own key and counted as a message, with
// the whole's sender and arrival; null keeps it whole; one that throws
// leaves it whole, counted. On both UDP receive paths and over TCP.

const test = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const { LoadBalancer } = require('../..')
const { startLb, waitFor, udpSocket, sendDatagram, tcpClient, write, fixture } = require('../helpers/lb')

const RECORDER = fixture('datagram-recorder-worker.js')

// Parts at each ',' (views of the bytes), keyed by their first letter; '!' throws, '?' gives strings.
class CommaBalancer extends LoadBalancer {
  parts (buf, start, end) {
    if (buf[start] === 0x21) throw new Error('a part it cannot read')
    if (buf[start] === 0x3f) return ['not', 'buffers']
    const comma = buf.indexOf(0x2c, start)
    if (comma === -1 || comma >= end) return null
    const parts = []
    for (let at = start; at < end;) {
      let next = buf.indexOf(0x2c, at)
      if (next === -1 || next > end) next = end
      parts.push(buf.subarray(at, next))
      at = next + 1
    }
    return parts
  }

  key (message) {
    return message.data.toString('latin1', 0, 1)
  }
}

async function recorded (lb) {
  const { workers } = await lb.stats()
  return workers.flatMap((w) => w.custom.records.map((r) => ({ ...r, slot: w.custom.slot })))
}

for (const udpReceiver of ['native', 'dgram']) {
  test(`parts(): each part its own message, by its own key, with the whole's sender (UDP, ${udpReceiver} receiver)`, { timeout: 60000 }, async (t) => {
    const lb = await startLb(t, { worker: RECORDER, distribution: 'hash', udpReceiver }, CommaBalancer)
    const socket = await udpSocket(t)
    // Enough datagrams at once that the native receiver hands over batches of many.
    const sent = []
    for (let i = 0; i < 300; i++) {
      const text = `a${i}-${'x'.repeat(i % 50)},b${i},a${i}y`
      sent.push(text)
      socket.send(text, lb.address().port, '127.0.0.1')
    }
    await sendDatagram(socket, lb.address().port, 'whole-no-comma')
    await sendDatagram(socket, lb.address().port, '!,throws')
    await sendDatagram(socket, lb.address().port, '?,strings')
    // Each part a message; a whole one, the one parts() threw on and the one it gave strings for, one each.
    const summary = await waitFor(() => lb.summary().processed === 3 * sent.length + 3 && lb.summary(), { what: `${3 * sent.length + 3} messages processed` })
    assert.deepEqual(summary.events.partsErrors, 2)
    assert.equal(summary.bytes, [...sent, 'whole-no-comma', '!,throws', '?,strings'].reduce((n, text) => n + text.length, 0), 'the bytes that came, once (not the parts\' sum, short of the commas)')
    const records = await recorded(lb)
    const digest = (text) => crypto.createHash('sha256').update(text).digest('hex')
    const expected = [...sent.flatMap((s) => s.split(',')), 'whole-no-comma', '!,throws', '?,strings']
    assert.deepEqual(records.map((r) => r.sha256).sort(), expected.map(digest).sort(), 'every part\'s own bytes')
    const slots = (letter) => new Set(records.filter((r) => r.head[0] === letter).map((r) => r.slot))
    assert.equal(slots('a').size, 1, 'the a parts meet in one worker')
    assert.equal(slots('b').size, 1)
    assert.notDeepEqual([...slots('a')], [...slots('b')], 'a and b hash to different workers (two of two)')
    assert.ok(records.every((r) => r.rinfo.port === socket.address().port), 'the whole\'s sender')
  })
}

test('parts() over TCP: a frame\'s parts each a message; with split lines it is refused at start', { timeout: 60000 }, async (t) => {
  const lb = await startLb(t, { worker: RECORDER, protocol: 'tcp_server', distribution: 'hash' }, CommaBalancer)
  const socket = await tcpClient(t, lb.address().port)
  await write(socket, 'a1,b1\nb2\n')
  await waitFor(() => lb.summary().processed === 3, { what: '3 messages processed' })
  const records = await recorded(lb)
  assert.deepEqual(records.map((r) => r.head).sort(), ['a1', 'b1', 'b2'])
  assert.ok(records.every((r) => r.remote && r.remote.port === socket.localPort))
  assert.throws(() => new CommaBalancer({ worker: RECORDER, split: 'lines', port: 0 }), /split.*cannot be combined with a collector that splits its messages itself/)
})
