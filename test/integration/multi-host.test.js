'use strict'

// Several collector hosts behind a layer-4 balancer, one database: each a
// Linux network namespace (test/helpers/netns.js). The balancer is the
// kernel: nftables DNAT with a jhash of source address and port, so a flow
// always reaches the same collector host and keeps its source address. Both
// ends of every RTCP session are hashed to different collector hosts, so
// every stream document is written by two masters on two hosts.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Lab, netnsUnavailable } = require('../helpers/netns')
const { runCollector, waitFor } = require('../fixtures/foreground-run')
const { reportedSeq } = require('../fixtures/netns/rtcp-sessions')
const { pairKey } = require('../../workers/storage/stream-key')
const { accountedFor } = require('../..')

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'netns')
const CLI = path.join(__dirname, '..', '..', 'bin', 'collector.js')
const NODE = process.execPath
const PORT = 5005
const DB_PORT = 27017
const DATABASE = 'multihost'
const PROBE_PORTS = Array.from({ length: 72 }, (_, i) => 42000 + i)
const FIRST_SSRC = 0x20000000
const TABLE = 'ccbalance'

// CI runs as root with nftables installed (.ci/run): there the test must
// run, so a missing capability fails it instead of skipping it.
const unavailable = netnsUnavailable()
if (unavailable && process.env.CI) {
  test('network namespaces are available in CI', () => assert.fail(unavailable))
}

/** The balancer's ruleset: DNAT on a jhash of the source over `targets`, a counter per target. */
function balancerRules (vip, targets) {
  const map = targets.map((host, i) => `${i} : ${host.address}`).join(', ')
  return `table ip ${TABLE} {
  ${targets.map((host) => `counter to_${host.name} { }`).join('\n  ')}
  chain balance {
    type nat hook prerouting priority dstnat; policy accept;
    ip daddr ${vip} udp dport ${PORT} dnat to jhash ip saddr . udp sport mod ${targets.length} seed 0x5eed map { ${map} }
  }
  chain tally {
    type filter hook forward priority filter; policy accept;
    ${targets.map((host) => `ip daddr ${host.address} udp dport ${PORT} counter name to_${host.name}`).join('\n    ')}
  }
}
`
}

/** Collects a child's output (stdout and stderr); `line(pattern)` resolves once it matches. */
function watchOutput (child) {
  let out = ''
  const waiters = []
  const add = (d) => {
    out += d
    for (const waiter of waiters.splice(0)) waiter()
  }
  child.stdout.on('data', add)
  child.stderr.on('data', add)
  return {
    text: () => out,
    line: (pattern) => new Promise((resolve) => {
      const check = () => pattern.test(out) ? resolve() : waiters.push(check)
      check()
    })
  }
}

/** `promise`, or a failure naming `what` after `ms`. */
function within (promise, ms, what) {
  let timer
  const late = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms) })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

function killGroup (child, signal = 'SIGKILL') {
  try { process.kill(-child.pid, signal) } catch {}
}

/**
 * Where the balancer sends each probe port: a UDP listener on every
 * collector host prints the sources it sees.
 */
async function probeBalancer (lab, sender, collectorHosts) {
  const listeners = collectorHosts.map((host) => {
    const child = lab.spawn(host.ns, [NODE, path.join(FIXTURES, 'udp-probe-listener.js'), String(PORT)])
    return { host, child, output: watchOutput(child) }
  })
  try {
    await within(Promise.all(listeners.map((l) => l.output.line(/listening/))), 10000, 'the probe listeners')
    lab.exec(sender.ns, [NODE, path.join(FIXTURES, 'udp-probe-sender.js'), sender.gateway, String(PORT), sender.address, ...PROBE_PORTS.map(String)])
    const seen = () => listeners.flatMap((l) => l.output.text().split('\n').filter((s) => s.includes(':')).map((s) => [Number(s.split(':')[1]), l.host]))
    await waitFor(() => seen().length === PROBE_PORTS.length, { what: 'every probe to reach a collector host', timeout: 10000 })
    for (const l of listeners) assert.ok(l.output.text().split('\n').every((s) => !s.includes(':') || s.startsWith(`${sender.address}:`)), 'the balancer keeps the source address')
    return new Map(seen())
  } finally {
    for (const l of listeners) killGroup(l.child)
  }
}

/** Sessions whose two ends reach different collector hosts, spread over every pair of hosts. */
function planSessions (hostOf, hosts) {
  const free = new Map(hosts.map((h) => [h, PROBE_PORTS.filter((p) => hostOf.get(p) === h)]))
  const pairs = []
  for (let i = 0; i < hosts.length; i++) for (let j = i + 1; j < hosts.length; j++) pairs.push([hosts[i], hosts[j]])
  const sessions = []
  for (let progress = true; progress;) {
    progress = false
    for (const [x, y] of pairs) {
      if (free.get(x).length === 0 || free.get(y).length === 0) continue
      const n = sessions.length
      sessions.push({
        a: { port: free.get(x).shift(), ssrc: FIRST_SSRC + 2 * n, host: x },
        b: { port: free.get(y).shift(), ssrc: FIRST_SSRC + 2 * n + 1, host: y }
      })
      progress = true
    }
  }
  return sessions
}

function send (lab, sender, sessions, firstReport, reports) {
  const plan = { target: sender.gateway, port: PORT, source: sender.address, sessions: sessions.map(({ a, b }) => ({ a: { port: a.port, ssrc: a.ssrc }, b: { port: b.port, ssrc: b.ssrc } })), firstReport, reports }
  const out = lab.exec(sender.ns, [NODE, path.join(FIXTURES, 'rtcp-sessions.js'), JSON.stringify(plan)])
  return Number(/sent (\d+)/.exec(out)[1])
}

/** `{ streams, counters }`: the documents, read on the database host. */
function queryDatabase (lab, dbHost) {
  const uri = `mongodb://${dbHost.address}:${DB_PORT}`
  return JSON.parse(lab.exec(dbHost.ns, [NODE, path.join(FIXTURES, 'query-database.js'), uri, DATABASE]))
}

/** The master run ids that wrote a side: the prefixes of its watermark origins (`<runId>_<worker>`). */
function writers (side) {
  return new Set(Object.keys(side.watermarks || {}).map((origin) => origin.split('_')[0]))
}

/**
 * Checks every session's one open stream: each side's packet count and
 * highest sequence number; `expected(end)` is `{ stored, last }`: how many
 * of the end's reports reached a collector, and the number of its last one.
 */
function checkStreams ({ streams: docs }, sessions, expected) {
  assert.equal(docs.length, sessions.length, 'one stream document per session, open or closed: no duplicates')
  const open = docs.filter((d) => d.active)
  const byPair = new Map()
  for (const doc of open) {
    const key = pairKey(doc.from.ID, doc.to.ID)
    assert.equal(doc.pairKey, key, 'the stream carries its shard key')
    assert.ok(!byPair.has(key), `one open stream per session: ${key} has two`)
    byPair.set(key, doc)
  }
  assert.equal(open.length, sessions.length, 'one stream per session, no duplicates')
  for (const session of sessions) {
    const doc = byPair.get(pairKey(String(session.a.ssrc), String(session.b.ssrc)))
    assert.ok(doc, `session ${session.a.ssrc}/${session.b.ssrc} has a stream`)
    for (const end of [session.a, session.b]) {
      const peer = end === session.a ? session.b : session.a
      const side = doc.from.ID === String(end.ssrc) ? doc.from : doc.to
      const { stored, last } = expected(end)
      assert.equal(side.packets, stored, `end ${end.ssrc} (host ${end.host.name}): ${stored} reports stored once each`)
      assert.equal(side.highestPacketNum, reportedSeq(peer.ssrc, last), `end ${end.ssrc}: the highest sequence number it reported`)
    }
  }
  return byPair
}

/**
 * Each host's collector counts the reports it stored under its own metric
 * (`<collector name>.packets`, per UTC day): `expected` lists
 * `[name, reports]`.
 */
function checkCounters ({ counters }, expected) {
  for (const [name, reports] of expected) {
    const daily = counters.filter((doc) => doc.metric === `${name}.packets`).reduce((sum, doc) => sum + (doc.daily || 0), 0)
    assert.equal(daily, reports, `collector ${name}'s packet counter holds what it received`)
  }
}

test('collector hosts behind an nftables jhash balancer write every stream from two hosts, once', {
  skip: unavailable && !process.env.CI ? `needs network namespaces: ${unavailable}` : false,
  timeout: 120000
}, async (t) => {
  const lab = new Lab()
  t.after(() => lab.destroy())
  const sender = lab.addHost('snd', 1)
  const dbHost = lab.addHost('db', 2)
  const collectorHosts = [1, 2, 3].map((i) => lab.addHost(`c${i}`, 10 + i))
  lab.nft(balancerRules(sender.gateway, collectorHosts))

  // The database host: the embedded MongoDB-compatible server on the host's address.
  const db = lab.spawn(dbHost.ns, [NODE, CLI, 'db', 'run', '--db-memory', '--host', '0.0.0.0', '--port', String(DB_PORT)])
  t.after(() => killGroup(db))
  const dbOutput = watchOutput(db)
  await within(Promise.race([dbOutput.line(/MONGODB_URI=/), new Promise((resolve, reject) => db.on('exit', (code) => reject(new Error(`db host exited ${code}: ${dbOutput.text()}`))))]), 30000, 'the database host')

  // Learn where the balancer sends each source port, then pair ends across hosts.
  const hostOf = await probeBalancer(lab, sender, collectorHosts)
  const sessions = planSessions(hostOf, collectorHosts)
  assert.ok(sessions.length >= 12, `enough sessions across hosts (${sessions.length})`)
  for (const s of sessions) assert.notEqual(s.a.host, s.b.host)
  const ends = sessions.flatMap((s) => [s.a, s.b])
  const endsOn = (host) => ends.filter((end) => end.host === host).length

  const mongoUri = `mongodb://${dbHost.address}:${DB_PORT}/${DATABASE}`
  const runs = new Map()
  await Promise.all(collectorHosts.map(async (host) => {
    runs.set(host, await runCollector(t, 'rtcp', {
      wrapper: lab.wrapper(host.ns),
      port: PORT,
      flags: ['--host', '0.0.0.0', '-i', '2', '--mongo-uri', mongoUri, '--flush-interval', '100ms', '--log-format', 'json']
    }))
  }))
  const statsOf = async (host) => (await runs.get(host).stats())
  const settled = async (host, received) => {
    const s = await statsOf(host)
    return s.received === received && s.processed === received && s.inFlight === 0 && s
  }

  // Phase 1: every end reports 12 times; each host gets exactly its ends' reports.
  const R1 = 12
  const counts0 = lab.counters(TABLE) // the probes
  const sent1 = send(lab, sender, sessions, 1, R1)
  assert.equal(sent1, ends.length * R1)
  for (const host of collectorHosts) {
    await waitFor(() => settled(host, endsOn(host) * R1), { what: `host ${host.name} to store its ${endsOn(host) * R1} reports`, timeout: 20000 })
  }
  const received1 = await Promise.all(collectorHosts.map(async (host) => (await statsOf(host)).received))
  t.diagnostic(`phase 1: ${sessions.length} sessions, ${sent1} datagrams sent, received per host ${received1.join(' / ')}`)
  assert.equal(received1.reduce((a, b) => a + b, 0), sent1, 'the hosts together received every datagram sent')
  for (const [i, host] of collectorHosts.entries()) {
    assert.ok(received1[i] > 0, `host ${host.name} received traffic`)
    const s = await statsOf(host)
    assert.equal(s.failed, 0)
    assert.equal(s.dropped.total, 0)
  }
  const counts1 = lab.counters(TABLE)
  for (const host of collectorHosts) assert.equal(counts1[`to_${host.name}`] - counts0[`to_${host.name}`], endsOn(host) * R1, `the balancer forwarded to ${host.name} what it received`)

  const byPair = checkStreams(queryDatabase(lab, dbHost), sessions, () => ({ stored: R1, last: R1 }))
  checkCounters(queryDatabase(lab, dbHost), collectorHosts.map((host, i) => [runs.get(host).name, received1[i]]))
  for (const doc of byPair.values()) {
    const [from, to] = [writers(doc.from), writers(doc.to)]
    assert.equal(from.size, 1)
    assert.equal(to.size, 1)
    assert.notDeepEqual([...from], [...to], 'the two sides of a stream were written by two masters')
  }

  // Phase 2: host c3 stops. The balancer still hashes its flows to it, and
  // those datagrams are lost where no collector counts them: the balancer's
  // own counter is where an operator sees them.
  const [c1, c2, c3] = collectorHosts
  const stopped = runs.get(c3)
  process.kill(-stopped.pid, 'SIGINT')
  const exit = await within(stopped.exited, 20000, 'host c3\'s collector to stop')
  assert.equal(exit.code, 0, `host c3's collector drained and exited: ${exit.stderr}`)
  const R2 = 6
  const sent2 = send(lab, sender, sessions, R1 + 1, R2)
  for (const host of [c1, c2]) {
    await waitFor(() => settled(host, endsOn(host) * (R1 + R2)), { what: `host ${host.name} to store phase 2`, timeout: 20000 })
  }
  const counts2 = lab.counters(TABLE)
  const lostAtBalancer = counts2.to_c3 - counts1.to_c3
  assert.equal(lostAtBalancer, endsOn(c3) * R2, 'the datagrams hashed to the stopped host show only in the balancer\'s counter')
  const received2 = (await statsOf(c1)).received + (await statsOf(c2)).received - received1[0] - received1[1]
  t.diagnostic(`phase 2 (c3 stopped): ${sent2} sent, ${received2} received by c1 and c2, ${lostAtBalancer} forwarded to c3 by the balancer and counted nowhere else`)
  assert.equal(received2 + lostAtBalancer, sent2, 'what the live hosts counted plus what the balancer sent to the dead host is what was sent')
  checkStreams(queryDatabase(lab, dbHost), sessions, (end) => end.host === c3 ? { stored: R1, last: R1 } : { stored: R1 + R2, last: R1 + R2 })

  // Phase 3: the operator takes c3 out of the balancer (and forgets its
  // flows' NAT state); its flows move to c1 and c2, which carry on the same
  // streams: still one document per session, counts exact from then on.
  lab.nft(`flush table ip ${TABLE}\ndelete table ip ${TABLE}\n${balancerRules(sender.gateway, [c1, c2])}`)
  lab.flushConntrack()
  const R3 = 6
  const before3 = (await statsOf(c1)).received + (await statsOf(c2)).received
  const sent3 = send(lab, sender, sessions, R1 + R2 + 1, R3)
  await waitFor(async () => {
    const [s1, s2] = [await statsOf(c1), await statsOf(c2)]
    return s1.received + s2.received === before3 + sent3 && s1.processed === s1.received && s2.processed === s2.received && s1.inFlight === 0 && s2.inFlight === 0
  }, { what: 'c1 and c2 to store every phase 3 report', timeout: 20000 })
  const last = R1 + R2 + R3
  checkStreams(queryDatabase(lab, dbHost), sessions, (end) => ({ stored: end.host === c3 ? R1 + R3 : last, last }))

  // Both stop cleanly, every message they received accounted for.
  let total = 0
  const finalCounts = [[runs.get(c3).name, received1[2]]]
  for (const host of [c1, c2]) {
    const run = runs.get(host)
    process.kill(-run.pid, 'SIGINT')
    const { code, stdout } = await within(run.exited, 20000, `host ${host.name}'s collector to stop`)
    assert.equal(code, 0)
    const summary = JSON.parse(stdout.split('\n').find((line) => line.includes('"collector stopped"')))
    assert.ok(accountedFor(summary), `host ${host.name} accounted for every message: ${JSON.stringify(summary)}`)
    total += summary.received
    finalCounts.push([run.name, summary.received])
  }
  checkCounters(queryDatabase(lab, dbHost), finalCounts)
  assert.equal(total, (ends.length - endsOn(c3)) * (R1 + R2) + sent3, 'c1 and c2 received their own reports of every phase and all of phase 3')
})
