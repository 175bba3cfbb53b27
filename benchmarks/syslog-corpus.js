'use strict'
// The realistic syslog corpus of the end-to-end benchmarks (syslog-e2e.js,
// syslog-vs-syslog-ng.js): RFC 5424 lines, most with structured data, some
// with a BOM or UTF-8 text, and about a fifth RFC 3164; ~277 bytes a line,
// varied hosts and apps, `seq=<i>` in MSG. Message i is seeded by i, so
// every run and every side gets the same lines.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { generateSyslog } = require('../collectors/syslog/generator')

// mulberry32: message i draws from its own stream, so the corpus does not
// depend on how much of it is built.
function rng (seed) {
  let a = seed >>> 0
  return (n) => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return (((t ^ (t >>> 14)) >>> 0) % n)
  }
}

const APPS = ['nginx', 'sshd', 'postgres', 'kubelet', 'haproxy', 'app-orders', 'systemd', 'dockerd']
const HOSTS3164 = ['fw-edge-1', 'sw-core-2', 'ap-lobby', 'nas01', 'router-dc1']
const TAGS3164 = ['kernel', 'sshd', 'CRON', 'dhcpd', 'postfix/smtpd', 'ntpd']
const MSGIDS = ['ACCESS', 'AUTH', 'AUDIT', 'HEALTH', 'ID47', 'CFG']
const TEXTS = [
  (r) => `GET /api/v1/orders/${r(100000)} HTTP/1.1 ${[200, 200, 200, 304, 404, 500][r(6)]} ${r(20000)} "-" "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0" rt=0.${r(999)}`,
  (r) => `Accepted publickey for deploy from 10.${r(256)}.${r(256)}.${r(256)} port ${1024 + r(60000)} ssh2: ED25519 SHA256:q${r(1e6)}x`,
  (r) => `connection authorized: user=app database=orders application_name=api-${r(40)}`,
  (r) => `Failed password for invalid user admin from 203.0.113.${r(256)} port ${1024 + r(60000)} ssh2`,
  (r) => `Benutzer müller hat sich angemeldet (Sitzung ${r(10000)}), Gerät: Büro-Drucker`,
  (r) => `ошибка соединения с базой данных: тайм-аут ${r(30)} с`,
  (r) => `pod default/orders-${r(9000)} container api: readiness probe failed: HTTP probe failed with statuscode: 503`,
  (r) => `backend orders/srv${r(8)} is DOWN, reason: Layer4 timeout, check duration: ${r(3000)}ms. ${r(4)} active and 0 backup servers left.`
]

function structuredData (r, i) {
  const sd = {}
  if (r(10) < 8) sd.origin = { ip: `10.1.${r(256)}.${r(256)}`, software: 'collector-test', swVersion: '2.4.1' }
  if (r(10) < 6) sd.meta = { sequenceId: String(i + 1), sysUpTime: String(r(1e7)), language: 'en-US' }
  if (r(10) < 4) sd['exampleSDID@32473'] = { iut: String(r(9)), eventSource: 'Application "orders"', eventID: String(r(9999)) }
  if (r(10) < 2) sd['trace@41058'] = { traceId: r(1e9).toString(16).padStart(8, '0'), tag: ['a', 'b]c'] }
  return Object.keys(sd).length > 0 ? sd : undefined
}

/** Message i of the corpus: the same for every run (seeded by i), `seq=i` in MSG. */
function corpusMessage (i, baseMs, rate) {
  const r = rng(i + 1)
  const date = new Date(baseMs + Math.floor(i * 1000 / rate))
  const severity = [6, 6, 6, 5, 4, 3, 7, 2][r(8)]
  const text = `${TEXTS[r(TEXTS.length)](r)} seq=${i}`
  if (r(100) < 20) {
    return generateSyslog({ format: '3164', host: HOSTS3164[r(HOSTS3164.length)], app: TAGS3164[r(TAGS3164.length)], procid: r(4) ? String(100 + r(60000)) : undefined, facility: [0, 4, 9, 3, 16][r(5)], severity, date, message: text })
  }
  return generateSyslog({
    format: '5424',
    host: `${APPS[r(APPS.length)]}-${r(12)}.dc${1 + r(3)}.example.net`,
    app: APPS[r(APPS.length)],
    procid: r(3) ? String(1 + r(65535)) : undefined,
    msgid: r(2) ? MSGIDS[r(MSGIDS.length)] : undefined,
    facility: [1, 16, 17, 3, 10][r(5)],
    severity,
    date,
    structuredData: structuredData(r, i),
    bom: r(10) === 0,
    message: text
  })
}

// The corpus, built once per invocation into a file of length-prefixed
// lines (the sender of every run reads its first `total`).
function writeCorpus (total, baseMs, rate) {
  const file = path.join(os.tmpdir(), `syslog-corpus-${process.pid}-${total}.bin`)
  const parts = []
  for (let i = 0; i < total; i++) {
    const line = Buffer.from(corpusMessage(i, baseMs, rate))
    const head = Buffer.allocUnsafe(2)
    head.writeUInt16BE(line.length)
    parts.push(head, line)
  }
  fs.writeFileSync(file, Buffer.concat(parts))
  return file
}

function readCorpus (file, total) {
  const data = fs.readFileSync(file)
  const corpus = []
  for (let at = 0; corpus.length < total && at < data.length;) {
    const length = data.readUInt16BE(at)
    corpus.push(data.subarray(at + 2, at + 2 + length))
    at += 2 + length
  }
  if (corpus.length < total) throw new Error(`the corpus holds ${corpus.length} messages, not ${total}`)
  return corpus
}

module.exports = { corpusMessage, writeCorpus, readCorpus }
