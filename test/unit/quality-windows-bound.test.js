'use strict'

// The quality windows a stream side opens are bounded by the collector's
// clock, not by the sequence numbers its sender chooses
// (collectors/rtcp/window-allowance.js): a hostile sender's windows stay
// within the allowance with its loss all counted, and a real stream's
// windows are those of its intervals, as they were before the bound.

const test = require('node:test')
const assert = require('node:assert/strict')
const { CallQuality } = require('../../collectors/rtcp/call-quality')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
const { windowsOf, windowSpan, WINDOW_MS } = require('../../collectors/rtcp/packet-time')
const { WINDOWS_PER_MS, BURST } = require('../../collectors/rtcp/window-allowance')
const { parseSdp } = require('../../collectors/hep/sdp')

const { block, scoredReport } = require('../helpers/scored-reports')

// The windows the reports' updates write ('<span>.<index>' → { lost, expected }),
// and the $inc of the other paths, summed as MongoDB's $inc would.
function stored (results) {
  const windows = new Map()
  const inc = {}
  for (const r of results) {
    const update = {}
    r.stats.addTo(update, 'side')
    for (const [path, value] of Object.entries(update.$inc)) {
      const m = /^side\.quality\.spans\.(\d+\.\d+)\.(lost|expected)$/.exec(path)
      if (!m) {
        inc[path] = (inc[path] || 0) + value
        continue
      }
      const w = windows.get(m[1]) || windows.set(m[1], { lost: 0, expected: 0 }).get(m[1])
      w[m[2]] += value
    }
  }
  return { windows, inc }
}

// The windows each report's interval covers, booked as they were before the
// bound: windowsOf over (previous highest sequence, this one] at the span
// the report was scored with, for every report with an interval.
function unbounded (reports, results) {
  const windows = new Map()
  for (let i = 1; i < reports.length; i++) {
    const expected = reports[i].highestSeq - reports[i - 1].highestSeq
    const lostInInterval = reports[i].cumulativeLost - reports[i - 1].cumulativeLost
    const span = windowSpan(results[i].fields.packetMs)
    for (const [index, packets] of windowsOf(span, reports[i - 1].highestSeq, reports[i].highestSeq)) {
      const key = `${span}.${index}`
      const w = windows.get(key) || windows.set(key, { lost: 0, expected: 0 }).get(key)
      w.expected += packets
      w.lost += lostInInterval * packets / expected
    }
  }
  return windows
}

function assertSameWindows (actual, expected, what) {
  assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort(), `${what}: the same windows`)
  for (const [key, w] of expected) {
    assert.equal(actual.get(key).expected, w.expected, `${what}: window ${key} expected`)
    assert.ok(Math.abs(actual.get(key).lost - w.lost) < 1e-9, `${what}: window ${key} lost ${actual.get(key).lost}, before ${w.lost}`)
  }
}

test('a sender moving its highest sequence 127 windows a report, 2,000 reports 5 s apart: its windows stay within twice the media\'s pace plus a burst, its loss all counted', () => {
  const q = new CallQuality()
  const results = []
  const step = 127 * 500 // 127 windows of 20 ms packets, with a lost count that fits: an interval, not a restart
  for (let i = 0; i < 2000; i++) results.push(q.report(1, block({ highestSeq: 1000 + step * i, cumulativeLost: 7 * i }), 5000 * i))
  const { windows, inc } = stored(results)
  const elapsed = 5000 * 1999
  const allowance = BURST + elapsed * WINDOWS_PER_MS
  assert.equal(WINDOWS_PER_MS * WINDOW_MS, 2, 'twice the one window a real stream opens per 10 s of media')
  assert.ok(windows.size <= allowance + 1, `${windows.size} windows, the allowance ${allowance} (+ the first report's)`)
  assert.ok(windows.size >= elapsed * WINDOWS_PER_MS, `${windows.size} windows: the reports within the allowance are booked by their intervals`)
  // Nothing lost: every packet expected and every loss is in a window, and in the side's sums.
  let expected = 0
  let lost = 0
  for (const w of windows.values()) {
    expected += w.expected
    lost += w.lost
  }
  assert.equal(expected, step * 1999)
  assert.ok(Math.abs(lost - 7 * 1999) < 1e-6, `${lost} lost in the windows, ${7 * 1999} reported`)
  assert.deepEqual([inc['side.quality.loss.intervalExpected'], inc['side.quality.loss.intervalLost']], [step * 1999, 7 * 1999])
  assert.equal(inc['side.quality.loss.restarts'], undefined, 'no report was a restart')
  // The reports booked whole to one window are counted on the side and by the worker.
  const coarse = q.stats().windowsCoarse
  assert.ok(coarse > 1900, `${coarse} reports booked whole to one window`)
  assert.equal(inc['side.quality.windowsCoarse'], coarse)
  assert.equal(results.filter((r) => r.stats.windowsCoarse > 0).length, coarse)
  assert.equal(sideQuality({ packets: 2000, quality: { windowsCoarse: coarse } }).windowsCoarse, coarse)
  assert.equal(results.filter((r) => typeof r.fields.mos === 'number').length, 2000, 'every report scored')
})

test('over HEP the capture time is the agent\'s to choose: a sender stepping it 640 s a report gets no more windows, the allowance runs on the arrival at the collector', () => {
  const { toStreamUpdates } = require('../../collectors/rtcp/to-stream-updates')
  const { decodeRtcp } = require('../../collectors/rtcp/decoder')
  const { encodeReport } = require('../../collectors/rtcp/encoder')
  const q = new CallQuality()
  const step = 127 * 500
  let windowsCoarse = 0
  const keys = new Set()
  for (let i = 0; i < 2000; i++) {
    const datagram = encodeReport({ ssrc: 1, reports: [block({ highestSeq: 1000 + step * i, cumulativeLost: 7 * i })], cname: 'hostile' })
    // Captured (the agent says) 640 s after the one before; reaching the collector 5 s after it.
    for (const item of toStreamUpdates(decodeRtcp(datagram), { address: '10.0.0.9' }, 640000 * i, q, 5000 * i)) {
      if (!item.stats) continue
      const update = {}
      item.stats.addTo(update, 'side')
      for (const path of Object.keys(update.$inc)) if (path.startsWith('side.quality.spans.')) keys.add(path.replace(/\.(lost|expected|delaySum|delayCount)$/, ''))
      windowsCoarse += update.$inc['side.quality.windowsCoarse'] || 0
    }
  }
  const allowance = BURST + 5000 * 1999 * WINDOWS_PER_MS
  assert.ok(keys.size <= allowance + 1, `${keys.size} windows, the allowance ${allowance} by the arrivals (by the capture times, about 254,000)`)
  assert.ok(windowsCoarse > 1900, `${windowsCoarse} reports booked whole to one window`)
})

test('restarts are no way around the bound: a report that starts the numbering over each second opens windows at the allowance\'s pace', () => {
  const q = new CallQuality()
  const results = []
  for (let i = 0; i < 2000; i++) {
    // Back by millions, then on by millions with a lost count that does not fit: a restart every report, each in a window of its own.
    const restart = i % 2 === 0 ? { highestSeq: 10000000 + 1000 * i, cumulativeLost: 0 } : { highestSeq: 1000 * i, cumulativeLost: 1000 }
    results.push(scoredReport(q, 1, restart, 1000 * i))
  }
  const { windows, inc } = stored(results)
  assert.equal(inc['side.quality.loss.restarts'], 1999)
  const allowance = BURST + 1000 * 1999 * WINDOWS_PER_MS
  assert.ok(windows.size <= allowance, `${windows.size} windows, the allowance ${allowance}`)
  assert.equal(inc['side.quality.windowsCoarse'], 2000 - windows.size, 'every report not in a window of its own is booked to the side\'s last one')
  assert.equal(q.stats().windowsCoarse, 2000 - windows.size)
})

test('real streams book the windows of their intervals as before the bound: reports every 5 s, a minute of reports missed, Opus at 48 kHz, a packet interval that changes the span', () => {
  // 20 ms packets (250 every 5 s) for 30 minutes with some loss, then a minute with no report arriving and one covering it.
  const reports = []
  for (let i = 0; i < 360; i++) reports.push({ at: 5000 * i, highestSeq: 1000 + 250 * i, cumulativeLost: Math.floor(i * 1.5) })
  for (let i = 0; i < 24; i++) reports.push({ at: 1860000 + 5000 * i, highestSeq: 1000 + 250 * 371 + 250 * i, cumulativeLost: 540 + 3 * i + (i > 0 ? 40 : 0) })
  check('20 ms, every 5 s, a minute missed', reports)
  // 60 ms packets (80 every 4.8 s) that only the reports' pace tells: the codec's span (500) until it is measured (167).
  check('60 ms, measured from the reports', Array.from({ length: 60 }, (_, i) => ({ at: 4800 * i, highestSeq: 1102 + 80 * i, cumulativeLost: i >= 6 ? 33 : 0 })))
  // Opus at 48 kHz with 20 ms packets, from the call's SDP; and the same call's span changing when the SDP says 60 ms.
  for (const ptime of [20, 60]) {
    const q = new CallQuality()
    const sdp = ['v=0', 'o=- 1 1 IN IP4 10.0.0.2', 's=-', 'c=IN IP4 10.0.0.2', 't=0 0', 'm=audio 40000 RTP/AVP 111', 'a=rtpmap:111 opus/48000/2', `a=ptime:${ptime}`, ''].join('\r\n')
    const bind = () => {
      q.clocks.announce('call', parseSdp(sdp), 'answer', 0)
      q.clocks.bindCall('call', { ip: '10.0.0.2', port: 40001 }, { ip: '10.0.0.1', port: 30001 }, [2], 0)
    }
    if (ptime === 20) bind()
    const perReport = 5000 / ptime
    const opus = Array.from({ length: 120 }, (_, i) => ({ at: 5000 * i, highestSeq: 5000 + perReport * i, cumulativeLost: 2 * i }))
    check(`Opus/48000, ptime ${ptime}${ptime === 60 ? ' known after 10 reports' : ''}`, opus, q, (i) => { if (ptime === 60 && i === 10) bind() })
  }
})

function check (what, reports, q = new CallQuality(), before = () => {}) {
  const results = reports.map(({ at, ...fields }, i) => {
    before(i)
    return q.report(1, block(fields), at)
  })
  assert.equal(q.stats().windowsCoarse, 0, `${what}: no report booked whole to one window`)
  assertSameWindows(stored(results).windows, unbounded(reports, results), what)
  return results
}
