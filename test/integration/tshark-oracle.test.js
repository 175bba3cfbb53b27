'use strict'

// tshark (Wireshark's dissectors) as an independent oracle for both decoders.
// The same bytes go to parseSyslog / decodeRtcp and, as UDP datagrams in a
// pcap (test/helpers/pcap.js), to `tshark -T json` / `-T fields`; every field
// tshark really parses is compared per message. Where tshark's reading and
// ours differ by design, the case is listed in SYSLOG_DISAGREEMENTS or
// explained next to the transformation applied; nothing else is tolerated.
// Other oracles: syslog-oracle.test.js (go-syslog), rtcp-oracle.test.js (pion),
// rtcp-peers.test.js (tshark on real ffmpeg/GStreamer traffic).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { parseSyslog } = require('../../collectors/syslog/parser')
const { decodeRtcp, tryDecodeRtcp } = require('../../collectors/rtcp/decoder')
const { encodeRtcp, encodeReport } = require('../../collectors/rtcp/encoder')
const { PT } = require('../../collectors/rtcp/constants')
const { pushReport } = require('../helpers/tshark-rtcp')
const { corpora } = require('../../benchmarks/syslog-decoder-bench')
const { writePcap } = require('../helpers/pcap')
const peers = require('../helpers/rtp-peers')
const { removeDir } = require('../helpers/temp-dir')

const SYSLOG_PORT = 514
const RTCP_PORT = 5005
const RTCP_VALID = 1200
const RTCP_MALFORMED = 300
const TIME = Date.UTC(2026, 5, 15, 12, 0, 0)

function hasTshark () {
  const out = spawnSync('tshark', ['-v'], { stdio: 'ignore' })
  return !out.error && out.status === 0
}

function tmpDir (t, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  t.after(() => removeDir(dir))
  return dir
}

/**
 * Run tshark on a pcap; TZ=UTC so absolute times print in UTC.
 * @returns {Promise<string>} stdout
 */
async function tshark (args) {
  const { code, stdout, stderr } = await peers.run('tshark', args, {
    maxBuffer: 256 << 20, timeout: 60000, env: { ...process.env, TZ: 'UTC' }
  })
  assert.equal(code, 0, `tshark failed: ${stderr}`)
  return stdout
}

// ---------------------------------------------------------------- syslog

// What Wireshark 4.0's syslog dissector parses, and so what is compared:
// - syslog.facility / syslog.level: the PRI, for every message.
// - RFC 5424 (syslog.version present): syslog.timestamp (parsed, shown in
//   UTC with nanoseconds; "-" shows as the epoch), syslog.hostname,
//   syslog.appname, syslog.procid (NILVALUE "-" kept literally: ours is null).
//   syslog.msgid is not the MSGID alone: the dissector gives the field the
//   rest of the datagram (MSGID, SD, MSG), decoded as ASCII; its first
//   space-delimited token is the MSGID, and only that is compared.
//   Structured data is not dissected at all, so it is not compared.
// - RFC 3164: syslog.timestamp_rfc3164 (the text; no year, so our inferred
//   year is not compared), syslog.hostname, and the TAG, which this version
//   files as syslog.procid; the rest after the TAG (the "[pid]: " and the
//   content) lands in syslog.msgid as ASCII, so our procid is compared as
//   its "[pid]" prefix.
// - syslog.msg is everything after the PRI, decoded as UTF-8: our message
//   (the MSG / CONTENT, BOM dropped) must be exactly its tail, after the
//   header tshark also sees.
// Not compared: our facility/severity names (not in tshark), structuredData,
// the 5424 BOM flag (tshark's syslog.msgid.bom is never set by 4.0 for
// these: it files the BOM inside syslog.msgid), receivedAt.
const SYSLOG_FIELDS = [
  'syslog.facility', 'syslog.level', 'syslog.version', 'syslog.timestamp', 'syslog.timestamp_rfc3164',
  'syslog.hostname', 'syslog.appname', 'syslog.procid', 'syslog.msgid', 'syslog.msg', '_ws.malformed'
]

// RFC 3164 and RFC 5424 lines written by hand (RFC examples and variants).
const SYSLOG_EXTRA = [
  '<34>Oct 11 22:14:15 mymachine su: \'su root\' failed for lonvick on /dev/pts/8',
  '<13>Feb  5 17:32:18 10.0.0.99 Use the BFG!',
  '<165>Aug 24 05:34:00 CST 1987 mymachine myproc[10]: %% It\'s time to make the do-nuts.',
  '<0>Oct 22 10:52:12 scapegoat sched[0]: That\'s All Folks!',
  '<191>Dec 31 23:59:59 host-1.example.org cron[12345]: (root) CMD (run-parts /etc/cron.hourly)',
  '<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \uFEFF\'su root\' failed for lonvick on /dev/pts/8',
  '<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It\'s time to make the do-nuts.',
  '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] \uFEFFAn application event log entry...',
  '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]',
  '<14>1 - - - - - - no header fields at all',
  '<0>1 2026-01-01T00:00:00Z h a p m - x',
  '<78>1 2026-06-15T08:30:00.5+05:30 web01 nginx 4242 ACCESS [req@1 path="/a\\]b" q="x=\\"1\\""] GET /a]b 200',
  '<86>1 2026-06-15T08:30:00.123456Z db-01 postgres 77 - [origin ip="10.1.2.3"][meta sequenceId="9"] checkpoint complete'
]

// Messages where tshark's reading and ours differ, with the field and why.
// Keyed by the exact message text; each entry must be met (no stale ones).
const SYSLOG_DISAGREEMENTS = new Map([
  ['<13>Feb  5 17:32:18 10.0.0.99 Use the BFG!', {
    field: 'app',
    reason: 'RFC 3164 §4.1.3 example without a TAG: we take a TAG only when ":" or "[" ends it (app null); tshark takes the first word "Use" as its TAG (syslog.procid)'
  }],
  ['<165>Aug 24 05:34:00 CST 1987 mymachine myproc[10]: %% It\'s time to make the do-nuts.', {
    field: 'app',
    reason: 'RFC 3164 §5.4 example with a non-standard timestamp: both read "CST" as HOSTNAME; "1987" is not a TAG for us (no ":" or "["), tshark takes it as its TAG'
  }]
])

function syslogCorpus () {
  const c = corpora()
  // 'malformed mix' is left out: it is built to be refused or read as raw, so
  // there is nothing header-level for tshark to agree with.
  const valid = [...c['5424 + SD, escapes, BOM, UTF-8'], ...c['5424 no SD'], ...c['3164']]
  return [...valid, ...SYSLOG_EXTRA.map((s) => Buffer.from(s))]
}

function nil (v) {
  return v === '-' ? null : v
}

/** "Mar 18, 2026 12:18:24.000003000 UTC" → ms since the epoch (ns cut to ms). */
function tsharkTimeMs (text) {
  const m = /^(\w{3}) +(\d+), (\d{4}) (\d\d):(\d\d):(\d\d)(?:\.(\d+))? UTC$/.exec(text)
  assert.ok(m, `unexpected tshark time ${text}`)
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'].indexOf(m[1])
  const ms = Number((m[7] || '0').padEnd(3, '0').slice(0, 3))
  return Date.UTC(Number(m[3]), month, Number(m[2]), Number(m[4]), Number(m[5]), Number(m[6]), ms)
}

function one (layers, name) {
  const v = layers[name]
  return v === undefined ? undefined : v[0]
}

/**
 * Compare one message; returns the names of fields that disagree (each must
 * be listed in SYSLOG_DISAGREEMENTS), asserting everything else.
 */
function compareSyslog (raw, ours, layers, label) {
  const differs = []
  const text = raw.toString('utf8')
  assert.equal(one(layers, '_ws.malformed'), undefined, `${label}: tshark finds it malformed`)
  assert.equal(Number(one(layers, 'syslog.facility')), ours.facility, `${label}: facility`)
  assert.equal(Number(one(layers, 'syslog.level')), ours.severity, `${label}: severity`)
  const msg = one(layers, 'syslog.msg')
  assert.equal(msg, text.slice(text.indexOf('>') + 1), `${label}: syslog.msg is the text after PRI`)
  if (ours.format === '5424') {
    assert.equal(one(layers, 'syslog.version'), '1', `${label}: tshark reads it as RFC 5424`)
    const stamp = one(layers, 'syslog.timestamp')
    const oursMs = ours.timestamp === null ? 0 : ours.timestamp.getTime()
    assert.equal(tsharkTimeMs(stamp), oursMs, `${label}: timestamp (${stamp})`)
    assert.equal(nil(one(layers, 'syslog.hostname')), ours.host, `${label}: hostname`)
    assert.equal(nil(one(layers, 'syslog.appname')), ours.app, `${label}: app-name`)
    assert.equal(nil(one(layers, 'syslog.procid')), ours.procid, `${label}: procid`)
    assert.equal(nil(one(layers, 'syslog.msgid').split(' ')[0]), ours.msgid, `${label}: msgid`)
  } else {
    assert.equal(ours.format, '3164', `${label}: we read it as 3164`)
    assert.equal(one(layers, 'syslog.version'), undefined, `${label}: tshark reads it as RFC 3164`)
    assert.equal(one(layers, 'syslog.timestamp_rfc3164'), ours.timestampText, `${label}: 3164 timestamp`)
    assert.equal(one(layers, 'syslog.hostname'), ours.host, `${label}: hostname`)
    const tag = one(layers, 'syslog.procid')
    if (tag !== ours.app) differs.push('app')
    if (ours.procid !== null) assert.ok(one(layers, 'syslog.msgid').startsWith(`[${ours.procid}]`), `${label}: procid`)
  }
  assert.ok(msg.endsWith(ours.message), `${label}: message is the tail of syslog.msg`)
  // The tail must start right after the header: a space, or a BOM after it.
  const head = msg.slice(0, msg.length - ours.message.length)
  if (ours.message !== '') assert.match(head, /[ :]\uFEFF?$/, `${label}: message starts after the header`)
  return differs
}

test('tshark reads syslog headers as parseSyslog does', { timeout: 60000 }, async (t) => {
  if (!hasTshark()) return t.skip('tshark is not installed')
  const messages = syslogCorpus()
  assert.ok(messages.length >= 2000)
  const file = path.join(tmpDir(t, 'tshark-syslog-'), 'syslog.pcap')
  await writePcap(file, messages.map((data, i) => ({ data, srcPort: 40000 + (i % 1000), dstPort: SYSLOG_PORT, time: TIME + i })))
  const out = await tshark(['-r', file, '-T', 'json', ...SYSLOG_FIELDS.flatMap((f) => ['-e', f])])
  const frames = JSON.parse(out).map((f) => f._source.layers)
  assert.equal(frames.length, messages.length, 'one frame per datagram')
  const receivedAt = new Date(TIME)
  const met = new Set()
  const formats = {}
  messages.forEach((raw, i) => {
    const text = raw.toString('utf8')
    const ours = parseSyslog(raw, { receivedAt })
    formats[ours.format] = (formats[ours.format] || 0) + 1
    const differs = compareSyslog(raw, ours, frames[i], `message ${i} ${JSON.stringify(text.slice(0, 60))}`)
    const listed = SYSLOG_DISAGREEMENTS.get(text)
    assert.deepEqual(differs, listed ? [listed.field] : [], `message ${i}: unlisted disagreement ${JSON.stringify(text)}`)
    if (listed) met.add(text)
  })
  assert.deepEqual([...met].sort(), [...SYSLOG_DISAGREEMENTS.keys()].sort(), 'every listed disagreement occurs')
  t.diagnostic(`${messages.length} messages compared: ${JSON.stringify(formats)}`)
})

// ------------------------------------------------------------------ RTCP

// Compared, per datagram, in order: rtcp.pt of every packet; rtcp.senderssrc
// (SR/RR); the SR sender info; rtcp.ssrc.identifier (report blocks, SDES
// chunks, BYE sources and the APP SSRC, in datagram order, as tshark lists
// them); every report-block field; SDES item types in order (tshark lists
// END as 0 per chunk) with their texts, PRIV prefixes, BYE reasons (tshark
// files them as rtcp.sdes.text too, after the SDES items); APP name and
// subtype. tshark decodes SDES text and BYE reasons as ASCII: each byte
// >= 0x80 shows as U+FFFD, so the expected text is ours with that mapping.
const RTCP_FIELDS = [
  'frame.protocols', 'rtcp.version', 'rtcp.pt', 'rtcp.senderssrc',
  'rtcp.timestamp.ntp.msw', 'rtcp.timestamp.ntp.lsw', 'rtcp.timestamp.rtp',
  'rtcp.sender.packetcount', 'rtcp.sender.octetcount',
  'rtcp.ssrc.identifier', 'rtcp.ssrc.fraction', 'rtcp.ssrc.cum_nr', 'rtcp.ssrc.ext_high',
  'rtcp.ssrc.jitter', 'rtcp.ssrc.lsr', 'rtcp.ssrc.dlsr',
  'rtcp.sdes.type', 'rtcp.sdes.text', 'rtcp.sdes.prefix.string',
  'rtcp.app.name', 'rtcp.app.subtype', 'rtcp.length_check', 'rtcp.length', '_ws.malformed', '_ws.expert.message'
]
const AGGREGATOR = '\u001f'
const NUMERIC = new Set(RTCP_FIELDS.slice(1, 16).concat(['rtcp.sdes.type', 'rtcp.app.subtype', 'rtcp.length_check', 'rtcp.length']))

function rng (seed) {
  let s = seed
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff
    return s % n
  }
}

function u32 (rand) {
  return rand(0x10000) * 0x10000 + rand(0x10000)
}

const WORDS = ['alice', 'bob', 'host', 'example.org', 'für', 'café', 'запрос', '処理', 'gst', 'ffmpeg', '@', '10.0.0.7']

function word (rand, max = 4) {
  return Array.from({ length: 1 + rand(max) }, () => WORDS[rand(WORDS.length)]).join(rand(2) ? '.' : ' ')
}

function block (rand) {
  return {
    ssrc: u32(rand),
    fractionLost: rand(256),
    cumulativeLost: rand(0x1000000) - 0x800000,
    highestSeq: u32(rand),
    jitter: u32(rand),
    lsr: u32(rand),
    dlsr: u32(rand)
  }
}

function sender (rand) {
  return { ntpSec: u32(rand), ntpFrac: u32(rand), rtpTimestamp: u32(rand), packetCount: u32(rand), octetCount: u32(rand) }
}

function items (rand) {
  const out = { cname: word(rand) }
  for (const name of ['name', 'email', 'phone', 'loc', 'tool', 'note']) if (rand(3) === 0) out[name] = word(rand)
  if (rand(4) === 0) out.priv = Array.from({ length: 1 + rand(2) }, () => ({ prefix: word(rand, 1), value: word(rand) }))
  return out
}

/** Valid compound datagrams: encodeReport as endpoints send, and richer mixes. */
function rtcpCorpus () {
  const rand = rng(7)
  const out = []
  for (let i = 0; i < RTCP_VALID; i++) {
    const ssrc = u32(rand)
    // Up to 31 report blocks in all, in one packet or split over two: more in
    // one compound is refused (too-many-sources, collectors/rtcp/constants.js).
    const reports = Array.from({ length: rand(8) === 0 ? 25 + rand(7) : rand(6) }, () => block(rand))
    if (i % 2 === 0) {
      const bye = [false, false, true, word(rand)][rand(4)]
      out.push(encodeReport({ ssrc, sender: rand(2) ? sender(rand) : undefined, reports, cname: word(rand), bye }))
      continue
    }
    const first = rand(2) ? { type: 'SR', ssrc, ...sender(rand), reports: reports.slice(0, 31) } : { type: 'RR', ssrc, reports: reports.slice(0, 31) }
    const packets = [first]
    if (rand(3) === 0 && reports.length < 31) packets.push({ type: 'RR', ssrc, reports: [block(rand)] })
    packets.push({ type: 'SDES', chunks: Array.from({ length: 1 + rand(3) }, (_, k) => ({ ssrc: k ? u32(rand) : ssrc, items: items(rand) })) })
    if (rand(3) === 0) packets.push({ type: 'APP', ssrc, name: ['PING', 'abcd', 'X1Y2'][rand(3)], subtype: rand(32), data: Buffer.alloc(4 * rand(3), 0x41) })
    if (rand(2)) packets.push({ type: 'BYE', sources: Array.from({ length: 1 + rand(4) }, (_, k) => (k ? u32(rand) : ssrc)), reason: rand(2) ? word(rand) : undefined })
    out.push(encodeRtcp(packets))
  }
  return out
}

/** tshark's text for bytes it decodes as ASCII. */
function asAscii (text) {
  return Array.from(Buffer.from(text, 'utf8'), (b) => (b < 0x80 ? String.fromCharCode(b) : '\uFFFD')).join('')
}

function expectedRtcp (decoded) {
  const e = Object.fromEntries(RTCP_FIELDS.map((f) => [f, []]))
  const push = (f, v) => e[f].push(v)
  const reasons = []
  for (const p of decoded.packets) {
    push('rtcp.version', 2)
    push('rtcp.pt', PT[p.type])
    if (p.type === 'SR' || p.type === 'RR') {
      pushReport(push, p)
    } else if (p.type === 'SDES') {
      for (const c of p.chunks) {
        push('rtcp.ssrc.identifier', c.ssrc)
        for (const item of c.list) {
          push('rtcp.sdes.type', item.type)
          push('rtcp.sdes.text', asAscii(item.text))
          if (item.type === 8) push('rtcp.sdes.prefix.string', asAscii(item.prefix))
        }
        push('rtcp.sdes.type', 0)
      }
    } else if (p.type === 'BYE') {
      p.sources.forEach((s) => push('rtcp.ssrc.identifier', s))
      if (p.reason !== undefined) reasons.push(asAscii(p.reason))
    } else if (p.type === 'APP') {
      push('rtcp.ssrc.identifier', p.ssrc)
      push('rtcp.app.name', p.name)
      push('rtcp.app.subtype', p.subtype)
    }
  }
  e['rtcp.sdes.text'].push(...reasons)
  e['rtcp.length_check'].push(1)
  return e
}

async function rtcpFrames (file) {
  const out = await tshark([
    '-r', file, '-d', `udp.port==${RTCP_PORT},rtcp`, '-T', 'fields',
    '-E', 'separator=/t', '-E', 'occurrence=a', '-E', `aggregator=${AGGREGATOR}`,
    ...RTCP_FIELDS.flatMap((f) => ['-e', f])
  ])
  return out.split('\n').filter(Boolean).map((line) => {
    const cols = line.split('\t')
    return Object.fromEntries(RTCP_FIELDS.map((f, i) => {
      const values = cols[i] ? cols[i].split(AGGREGATOR) : []
      return [f, NUMERIC.has(f) ? values.map(Number) : values]
    }))
  })
}

/** Malformed datagrams, each with the defect it carries. */
function rtcpMalformed (valid) {
  const rand = rng(11)
  const out = []
  for (let i = 0; i < RTCP_MALFORMED; i++) {
    const base = valid[rand(valid.length)]
    const kind = ['truncated', 'bad-version-first', 'bad-version-later', 'length-long', 'length-short'][i % 5]
    const d = Buffer.from(base)
    const headers = []
    for (let at = 0; at < d.length; at += (d.readUInt16BE(at + 2) + 1) * 4) headers.push(at)
    if (kind === 'truncated') {
      out.push({ kind, data: d.subarray(0, 1 + rand(d.length - 1)) })
    } else if (kind === 'bad-version-first' || kind === 'bad-version-later') {
      const at = kind === 'bad-version-first' || headers.length === 1 ? 0 : headers[1 + rand(headers.length - 1)]
      d[at] = (d[at] & 0x3f) | ([0, 1, 3][rand(3)] << 6)
      out.push({ kind, data: d })
    } else {
      const at = headers[rand(headers.length)]
      const words = d.readUInt16BE(at + 2)
      d.writeUInt16BE(kind === 'length-long' ? words + 1 + rand(4) : Math.max(0, words - 1 - rand(2)), at + 2)
      out.push({ kind, data: d })
    }
  }
  return out
}

/**
 * How tshark's dissection flags a datagram, or null when it does not.
 * The last test is not an alarm tshark raises but a fact its output shows:
 * a header whose version bits are not 2 after a packet whose length field
 * was made longer makes tshark stop quietly (no expert info, length check
 * passed), but the packets it lists then do not tile the datagram: their
 * lengths (rtcp.length + 1 words each) add up to less than its size.
 */
function tsharkFlag (f, size) {
  if (!f['frame.protocols'].join('').split(':').includes('rtcp')) return 'not RTCP'
  if (f['_ws.malformed'].length > 0) return 'malformed'
  if (f['rtcp.length_check'].includes(0)) return 'length check'
  if (f['rtcp.version'].some((v) => v !== 2)) return 'version'
  const covered = f['rtcp.length'].reduce((sum, words) => sum + (words + 1) * 4, 0)
  if (covered !== size) return 'packets do not tile the datagram'
  return null
}

test('tshark dissects RTCP as decodeRtcp does', { timeout: 60000 }, async (t) => {
  if (!hasTshark()) return t.skip('tshark is not installed')
  const valid = rtcpCorpus()
  const malformed = rtcpMalformed(valid)
  const file = path.join(tmpDir(t, 'tshark-rtcp-'), 'rtcp.pcap')
  const all = [...valid, ...malformed.map((m) => m.data)]
  await writePcap(file, all.map((data, i) => ({ data, srcPort: 30000 + (i % 1000), dstPort: RTCP_PORT, time: TIME + i })))
  const frames = await rtcpFrames(file)
  assert.equal(frames.length, all.length, 'one frame per datagram')

  await t.test(`${RTCP_VALID} valid compound datagrams agree field by field`, () => {
    valid.forEach((data, i) => {
      const decoded = decodeRtcp(data)
      const f = frames[i]
      assert.deepEqual(f['_ws.malformed'], [], `datagram ${i}: tshark finds it malformed`)
      assert.deepEqual(f['_ws.expert.message'], [], `datagram ${i}: tshark has expert info`)
      assert.equal(tsharkFlag(f, data.length), null, `datagram ${i}: tshark flags it`)
      const expected = expectedRtcp(decoded)
      for (const name of RTCP_FIELDS.slice(1, -3)) {
        assert.deepEqual(f[name], expected[name], `datagram ${i} (${decoded.packets.map((p) => p.type).join('+')}): ${name}`)
      }
    })
  })

  // tshark does flag every one of these defects in a checkable way: a wrong
  // version on the first header makes it give up on RTCP (frame.protocols
  // ends in "data"); one on a later header shows as rtcp.version != 2; a
  // length field past the datagram end throws (_ws.malformed); one short of
  // it fails the compound length check (rtcp.length_check 0 + expert info).
  await t.test(`${RTCP_MALFORMED} malformed datagrams: we refuse them and tshark flags them`, () => {
    const byKind = {}
    malformed.forEach((m, j) => {
      const result = tryDecodeRtcp(m.data)
      const label = `malformed ${j} (${m.kind}, ${m.data.length} bytes)`
      assert.equal(result.packets, null, `${label}: the decoder refuses it`)
      const flag = tsharkFlag(frames[valid.length + j], m.data.length)
      assert.ok(flag, `${label}: tshark flags it (we say ${result.reason}): ${JSON.stringify(frames[valid.length + j])}`)
      const key = `${m.kind} -> ${flag}`
      byKind[key] = (byKind[key] || 0) + 1
    })
    t.diagnostic(JSON.stringify(byKind))
  })
})
