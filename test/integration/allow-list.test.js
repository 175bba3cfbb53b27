'use strict'
// The `allow` option with real source addresses: two sender hosts, each a
// network namespace on a veth link of its own to this namespace, where the
// balancer listens on every address (a dual-stack socket: IPv4 senders
// arrive as ::ffff:a.b.c.d). One host's subnets are allowed, the other's
// are not; each sends over IPv4 and IPv6.
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFile, execFileSync } = require('node:child_process')
const { promisify } = require('node:util')
const { Lab, netnsUnavailable } = require('../helpers/netns')
const { startLb, waitFor, COUNTING } = require('../helpers/lb')
const { accountedFor } = require('../../lib/master/counters')
const { runCli } = require('../helpers/cli')

const IP = '/usr/sbin/ip'
const SENDER = path.join(__dirname, '..', 'fixtures', 'netns', 'allow-sender.js')
const DATAGRAMS = 300
const FRAMES = 100

// CI runs as root with iproute2 (.ci/run): there the test must run, so a
// missing capability fails it instead of skipping it.
const unavailable = netnsUnavailable()
if (unavailable && process.env.CI) {
  test('network namespaces are available in CI', () => assert.fail(unavailable))
}
const skip = unavailable && !process.env.CI ? `needs network namespaces: ${unavailable}` : false

let hosts = null
let lab = null
after(() => lab && lab.destroy())

/**
 * The two sender hosts (built once): `{ ns, v4, v6, to4, to6 }`, where
 * to4/to6 are this namespace's addresses on the host's link. Subnets are
 * per run (10.77.n.0/24, fd77:n::/64), so runs in parallel do not collide.
 */
function senderHosts () {
  if (hosts) return hosts
  lab = new Lab()
  const first = 2 * (process.pid % 120) + 1
  hosts = ['in', 'out'].map((name, i) => {
    const n = first + i
    const ns = lab.namespace(`al${name}`)
    const outer = `${lab.prefix}al${name}`.slice(0, 15)
    execFileSync(IP, ['link', 'add', outer, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
    execFileSync(IP, ['addr', 'add', `10.77.${n}.1/24`, 'dev', outer])
    execFileSync(IP, ['-6', 'addr', 'add', `fd77:${n}::1/64`, 'dev', outer, 'nodad'])
    execFileSync(IP, ['link', 'set', outer, 'up'])
    lab.exec(ns, [IP, 'link', 'set', 'lo', 'up'])
    lab.exec(ns, [IP, 'addr', 'add', `10.77.${n}.2/24`, 'dev', 'eth0'])
    lab.exec(ns, [IP, '-6', 'addr', 'add', `fd77:${n}::2/64`, 'dev', 'eth0', 'nodad'])
    lab.exec(ns, [IP, 'link', 'set', 'eth0', 'up'])
    return { name, ns, n, v4: `10.77.${n}.2`, v6: `fd77:${n}::2`, to4: `10.77.${n}.1`, to6: `fd77:${n}::1` }
  })
  return hosts
}

/** Runs the sender fixture in `host`'s namespace; its JSON result. */
async function sendFrom (host, kind, target, port, count, tag) {
  const { stdout } = await promisify(execFile)(IP, ['netns', 'exec', host.ns, process.execPath, SENDER, kind, target, String(port), String(count), tag])
  return JSON.parse(stdout)
}

/** A logger that keeps every line: `{ level, fields, msg }`. */
function recordingLogger () {
  const lines = []
  const logger = { lines, level: 'trace', child: () => logger }
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    logger[level] = (fields, msg) => lines.push({ level, fields, msg })
  }
  return logger
}

async function customOf (lb) {
  const { workers } = await lb.stats()
  return {
    texts: workers.flatMap((w) => w.custom.texts.map((t) => t.split('|')[1])),
    sources: new Set(workers.flatMap((w) => w.custom.sources.map((s) => s.slice(0, s.lastIndexOf(':')))))
  }
}

function allowOf (host) {
  return [`10.77.${host.n}.0/24`, `fd77:${host.n}::/64`]
}

const tags = (prefix, count) => Array.from({ length: count }, (_, i) => `${prefix} ${i}`)

// The log of refusals: at least one line, at most one per 10 s interval, each naming a refused source.
function assertRefusalLog (logger, kind, refused, startedAt) {
  const lines = logger.lines.filter((l) => l.level === 'warn' && /not in allow/.test(l.msg) && (kind === 'datagram' ? /dropped/ : /closed at accept/).test(l.msg))
  assert.ok(lines.length >= 1, `a ${kind} refusal is logged`)
  assert.ok(lines.length <= 1 + Math.floor((Date.now() - startedAt) / 10000), `${lines.length} ${kind} refusal lines: rate-limited`)
  for (const line of lines) assert.ok(refused.includes(line.fields.remote), `logged source ${line.fields.remote} is a refused one`)
}

const UDP_CASES = [
  { udpReceiver: 'native', host: '::' },
  { udpReceiver: 'dgram', host: '::' },
  { udpReceiver: 'native', host: '0.0.0.0' }
]

for (const { udpReceiver, host } of UDP_CASES) {
  const families = host === '::' ? ['v4', 'v6'] : ['v4']
  test(`udp, ${udpReceiver} receiver on ${host}: datagrams from allowed prefixes (${families.join(', ')}) are all processed, the others dropped and counted in dropped.notAllowed`, { skip, timeout: 120000 }, async (t) => {
    const [inside, outside] = senderHosts()
    const logger = recordingLogger()
    const startedAt = Date.now()
    const lb = await startLb(t, { host, udpReceiver, allow: allowOf(inside), workerOptions: { record: true }, logger })
    assert.equal(lb.receiver(), udpReceiver)
    const port = lb.address().port
    const sends = []
    for (const family of families) {
      for (const from of [inside, outside]) sends.push(sendFrom(from, 'udp', from[`to${family.slice(1)}`], port, DATAGRAMS, `${from.name}-${family}`))
    }
    for (const result of await Promise.all(sends)) assert.equal(result.sent, DATAGRAMS)
    const total = sends.length * DATAGRAMS
    const s = await waitFor(() => {
      const now = lb.summary()
      return now.received + now.dropped.kernel === total && accountedFor(now) && now
    }, { what: `${total} datagrams accounted for`, timeout: 30000 })

    const allowed = families.length * DATAGRAMS
    assert.equal(s.dropped.kernel, 0, 'the kernel dropped nothing (else the counts below cannot be exact)')
    assert.equal(s.dropped.notAllowed, allowed, 'every datagram from the other host is dropped as notAllowed')
    assert.equal(s.processed, allowed)
    assert.equal(s.failed, 0)
    assert.equal(s.dropped.total, s.dropped.notAllowed)
    assert.equal(s.received + s.dropped.kernel, s.processed + s.failed + s.dropped.total)

    const custom = await customOf(lb)
    assert.deepEqual(custom.texts.sort(), families.flatMap((f) => tags(`in-${f}`, DATAGRAMS)).sort(), 'the workers got every allowed datagram once, nothing else')
    const v4Source = host === '::' ? `::ffff:${inside.v4}` : inside.v4
    assert.deepEqual([...custom.sources].sort(), (host === '::' ? [v4Source, inside.v6] : [v4Source]).sort())
    const refused = host === '::' ? [`::ffff:${outside.v4}`, outside.v6] : [outside.v4]
    assertRefusalLog(logger, 'datagram', refused, startedAt)
  })
}

test('tcp_server: connections from outside the allowed prefixes are closed at accept and counted; the allowed ones\' frames all arrive', { skip, timeout: 120000 }, async (t) => {
  const [inside, outside] = senderHosts()
  const logger = recordingLogger()
  const startedAt = Date.now()
  const lb = await startLb(t, { protocol: 'tcp_server', host: '::', allow: allowOf(inside), workerOptions: { record: true }, logger, worker: COUNTING })
  const port = lb.address().port
  const results = await Promise.all(['4', '6'].flatMap((v) => [inside, outside].map((from) => sendFrom(from, 'tcp', from[`to${v}`], port, FRAMES, `${from.name}-v${v}`))))
  for (const result of results) assert.equal(result.received, 0, 'the collector never writes to a sender')
  const s = await waitFor(() => {
    const now = lb.summary()
    return now.processed === 2 * FRAMES && accountedFor(now) && now
  }, { what: `${2 * FRAMES} frames processed`, timeout: 30000 })

  assert.equal(s.eventReasons.connectionsRejected.notAllowed, 2, 'the other host\'s IPv4 and IPv6 connections')
  assert.equal(s.events.connectionsRejected, 2)
  assert.equal(s.events.connections, 2, 'only the allowed host\'s connections were opened')
  assert.equal(s.received, 2 * FRAMES, 'nothing was read from a refused connection')
  assert.equal(s.dropped.total, 0)
  assert.equal(s.received + s.dropped.kernel, s.processed + s.failed + s.dropped.total)
  const custom = await customOf(lb)
  assert.deepEqual(custom.texts.sort(), ['v4', 'v6'].flatMap((f) => tags(`in-${f}`, FRAMES)).sort())
  assertRefusalLog(logger, 'connection', [`::ffff:${outside.v4}`, outside.v6], startedAt)
})

test('allow refuses a bad entry at construction, naming it; tcp_client refuses allow', () => {
  const { LoadBalancer, InvalidOptionError } = require('../..')
  assert.throws(() => new LoadBalancer({ worker: COUNTING, allow: ['10.0.0.0/8', '10.0.0.0/33'] }), (err) => {
    assert.ok(err instanceof InvalidOptionError)
    assert.equal(err.code, 'ERR_INVALID_OPTION')
    assert.equal(err.value, '10.0.0.0/33')
    assert.match(err.message, /^option "allow" has an entry that is not an address or prefix \(the prefix length 33 is over 32\), got "10\.0\.0\.0\/33"$/)
    return true
  })
  for (const bad of [['fd00::/129'], [''], ['1.2.3'], [], ['::ffff:1.2.3.4/64']]) {
    assert.throws(() => new LoadBalancer({ worker: COUNTING, allow: bad }), InvalidOptionError, JSON.stringify(bad))
  }
  assert.throws(() => new LoadBalancer({ worker: COUNTING, protocol: 'tcp_client', port: 9, allow: ['10.0.0.0/8'] }), /option "allow" applies to udp and tcp_server \(senders that reach us\), not to protocol tcp_client/)
  LoadBalancer.protocols.register('allow-test-custom', { start: async () => ({ address: () => null, close: async () => {} }) })
  assert.throws(() => new LoadBalancer({ worker: COUNTING, protocol: 'allow-test-custom', allow: ['10.0.0.0/8'] }), /not to protocol allow-test-custom/, 'a registered protocol\'s dispatch() is not filtered, so allow is refused there')
  assert.deepEqual(new LoadBalancer({ worker: COUNTING, allow: ' 10.0.0.0/8 , ::1' }).options.allow, ['10.0.0.0/8', '::1'])
})

test('collector run syslog --allow 10.0.0.0/33 exits 2 with one line naming the entry, no stack', async () => {
  const r = await runCli(process.env, 'run', 'syslog', '--allow', '10.0.0.0/33')
  assert.equal(r.code, 2)
  const lines = r.stderr.split('\n').filter((line) => /allow/.test(line))
  assert.deepEqual(lines, ['collector: invalid configuration: --allow: the prefix length 33 is over 32, got "10.0.0.0/33"'])
  assert.doesNotMatch(r.stderr, /\n\s+at .+:\d+:\d+/)
  const several = await runCli(process.env, 'run', 'syslog', '--allow', '10.0.0.0/8,fd00::/129')
  assert.equal(several.code, 2)
  assert.match(several.stderr, /--allow: "fd00::\/129" is not an address or prefix: the prefix length 129 is over 128/)
  const client = await runCli(process.env, 'run', 'syslog', '--protocol', 'tcp_client', '--port', '9', '--allow', '10.0.0.0/8')
  assert.equal(client.code, 2)
  assert.match(client.stderr, /--allow: applies to udp and tcp_server \(senders that reach us\), not to --protocol tcp_client/)
})
