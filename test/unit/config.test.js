'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const os = require('node:os')
const path = require('node:path')
const util = require('node:util')
const { LoadBalancerConfig, flagTypes } = require('../../configs')

const W = ['--workername', 'worker.js']
const WORKER = path.resolve('worker.js')

function parse (argv, env = {}) {
  return LoadBalancerConfig.parse([...W, ...argv], env)
}

function problemsOf (fn) {
  try {
    fn()
  } catch (err) {
    assert.equal(err.code, 'ERR_INVALID_CONFIG')
    assert.equal(err.name, 'InvalidConfigError')
    return err
  }
  assert.fail('expected an InvalidConfigError')
}

test('defaults fill in every base flag', () => {
  const config = parse([])
  assert.deepEqual(Object.fromEntries(Object.entries(config)), {
    recvBufferSize: 8 * 1024 * 1024,
    metricsPort: undefined,
    metricsHost: '127.0.0.1',
    buffer: false,
    bufferDir: undefined,
    deadLetterDir: undefined,
    bufferMaxBytes: 1024 ** 3,
    bufferSync: 'none',
    metricsWebConfig: undefined,
    respawnDelay: 100,
    maxCrashes: 10,
    crashWindow: 60000,
    drainTimeout: 30000,
    protocol: 'udp',
    host: '127.0.0.1',
    port: 0,
    udpReceiver: 'auto',
    receive: 'master',
    split: 'none',
    framing: 'newline',
    maxFrameBytes: 65536,
    maxConnections: 1024,
    maxConnectionsPerSource: 32,
    reclaimIdleAfter: 10000,
    frameTimeout: 60000,
    allow: undefined,
    idleTimeout: 300000,
    retry: true,
    retryDelay: 5000,
    tls: false,
    tlsCert: undefined,
    tlsKey: undefined,
    tlsCa: undefined,
    tlsAllowedNames: undefined,
    tlsHandshakeTimeout: 10000,
    workername: WORKER,
    instances: os.availableParallelism(),
    distribution: 'round-robin',
    affinity: 'prefer',
    batchSize: 256,
    batchDelay: 10,
    maxInFlight: 100000,
    memoryBudget: 8 * 1024 ** 2,
    workersNodeArgs: ['--max-semi-space-size=2', '--heap-growing-percent=20'],
    name: 'collector',
    logLevel: 'info',
    logFormat: 'auto',
    help: false,
    worker: WORKER
  })
})

test('getDefault() is frozen and ignores argv and env', () => {
  const defaults = new LoadBalancerConfig(['--port', '9'], {}).getDefault()
  assert.equal(defaults.port, 0)
  assert.equal(defaults.retryDelay, 5000)
  assert.equal(defaults.workername, undefined)
  assert.ok(Object.isFrozen(defaults))
})

test('every type parses its values', () => {
  const config = parse(['--port', '8080', '--instances', '3', '--retry-delay', '250',
    '--idle-timeout', '2m', '--batch-size', '+7', '--name', 'edge-1', '--no-retry'])
  assert.equal(config.port, 8080)
  assert.equal(config.instances, 3)
  assert.equal(config.retryDelay, 250)
  assert.equal(config.idleTimeout, 120000)
  assert.equal(config.batchSize, 7)
  assert.equal(config.name, 'edge-1')
  assert.equal(config.retry, false)
  assert.equal(config.workername, WORKER)
})

test('flag type parsers: duration, list, number, boolean, path', () => {
  const p = (type, raw) => flagTypes[type].parse(raw)
  assert.deepEqual([p('duration', 250), p('duration', '250ms'), p('duration', '5s'), p('duration', '2m'), p('duration', '1.5s')]
    .map((r) => r.value), [250, 250, 5000, 120000, 1500])
  assert.ok(p('duration', '5 parsecs').error)
  assert.deepEqual(p('list', 'a, b,,c').value, ['a', 'b', 'c'])
  assert.deepEqual(p('list', ['a,b', 'c']).value, ['a', 'b', 'c'])
  assert.equal(p('number', '-2.5e1').value, -25)
  assert.ok(p('number', '0x10').error)
  assert.ok(p('integer', '1.5').error)
  assert.deepEqual(['yes', 'off', '1', 'FALSE'].map((w) => p('boolean', w).value), [true, false, true, false])
  assert.ok(p('boolean', 'maybe').error)
  assert.equal(p('path', 'a/b.js').value, path.resolve('a/b.js'))
  assert.ok(p('port', 'abc').error)
})

test('kebab-case, camelCase, aliases and = forms', () => {
  const config = LoadBalancerConfig.parse(['-w', 'a.js', '-p', '5', '-i', '2', '-n', 'x',
    '--retryDelay=1s', '--max-frame-bytes=100', '--maxConnections', '7'])
  assert.equal(config.worker, path.resolve('a.js'))
  assert.equal(config.port, 5)
  assert.equal(config.instances, 2)
  assert.equal(config.name, 'x')
  assert.equal(config.retryDelay, 1000)
  assert.equal(config.maxFrameBytes, 100)
  assert.equal(config.maxConnections, 7)
  assert.equal(LoadBalancerConfig.parse(['--worker', 'b.js']).workername, path.resolve('b.js'))
})

test('seed-style single-dash long flags', () => {
  const config = LoadBalancerConfig.parse(['-retry', '-name', 'foo', '-workername', 'x.js', '-port', '5', '-retry-delay=2s'])
  assert.equal(config.retry, true)
  assert.equal(config.name, 'foo')
  assert.equal(config.workername, path.resolve('x.js'))
  assert.equal(config.port, 5)
  assert.equal(config.retryDelay, 2000)
  assert.equal(LoadBalancerConfig.parse(['-workername', 'x.js', '-retry=false']).retry, false)
  assert.equal(LoadBalancerConfig.parse(['-workername', 'x.js', '-no-retry']).retry, false)
})

test('booleans: --no-x, --x=false, --x false', () => {
  assert.equal(parse(['--no-retry']).retry, false)
  assert.equal(parse(['--retry=false']).retry, false)
  assert.equal(parse(['--retry', 'false']).retry, false)
  assert.equal(parse(['--no-retry', '--retry']).retry, true)
  assert.equal(parse(['-h']).help, true)
})

test('a repeated flag takes the last value', () => {
  assert.equal(parse(['--port', '1', '-p', '2']).port, 2)
})

test('negative numbers are values, not flags', () => {
  class Signed extends LoadBalancerConfig {
    static flags = LoadBalancerConfig.extendFlags({ offset: { type: 'number' }, skew: { type: 'integer' } })
  }
  const config = Signed.parse([...W, '--offset', '-5.5', '--skew', '-3'])
  assert.equal(config.offset, -5.5)
  assert.equal(config.skew, -3)
  const err = problemsOf(() => parse(['--batch-size', '-1']))
  assert.deepEqual(err.problems.map((p) => p.flag), ['batch-size'])
})

test('env: argv beats env beats default', () => {
  class EnvConfig extends LoadBalancerConfig {
    static flags = LoadBalancerConfig.extendFlags({
      port: { env: 'COLLECTOR_PORT' },
      tags: { type: 'list', env: 'COLLECTOR_TAGS', default: 'a' },
      verbose: { type: 'boolean', env: 'COLLECTOR_VERBOSE', default: false }
    })
  }
  const env = { COLLECTOR_PORT: '7000', COLLECTOR_TAGS: 'x,y', COLLECTOR_VERBOSE: 'yes' }
  assert.equal(EnvConfig.parse([...W], env).port, 7000)
  assert.equal(EnvConfig.parse([...W, '--port', '8000'], env).port, 8000)
  assert.equal(EnvConfig.parse([...W], {}).port, 0)
  assert.deepEqual(EnvConfig.parse([...W], env).tags, ['x', 'y'])
  assert.deepEqual(EnvConfig.parse([...W], {}).tags, ['a'])
  assert.equal(EnvConfig.parse([...W], env).verbose, true)
  assert.equal(EnvConfig.parse([...W, '--no-verbose'], env).verbose, false)
  const err = problemsOf(() => EnvConfig.parse([...W], { COLLECTOR_PORT: 'http' }))
  assert.match(err.message, /--port: .*"http".*COLLECTOR_PORT/)
})

test('instances: auto is the available parallelism', () => {
  assert.equal(parse(['-i', 'auto']).instances, os.availableParallelism())
  assert.equal(parse(['--instances', 'AUTO']).instances, os.availableParallelism())
  assert.equal(parse([]).instances, os.availableParallelism())
})

test('every problem is reported in one error naming each flag', () => {
  const argv = [
    '--port', 'abc', // wrong type
    '--batch-size', '0', // out of range
    '--max-connections', '1.5', // wrong type (integer)
    '--protocol', 'sctp', // bad choice
    '--prot', 'x', // unknown, close to --port
    '-bogus', // unknown single-dash long flag
    '--name', 'has space', // validate() failure
    '--retry=perhaps', // bad boolean value
    '--no-host', // not a boolean
    'stray', // positional
    '--retry-delay', '5 minutes', // bad duration
    '--log-level', // missing value (followed by a flag)
    '--distribution' // missing value (at the end)
  ]
  const err = problemsOf(() => LoadBalancerConfig.parse(argv, {}))
  const byFlag = Object.fromEntries(err.problems.filter((p) => p.flag).map((p) => [p.flag, p.message]))
  assert.match(byFlag.port, /port number.*"abc"/)
  assert.match(byFlag['batch-size'], /between 1 and 4096/)
  assert.match(byFlag['max-connections'], /integer/)
  assert.match(byFlag.protocol, /one of udp, tcp_server, tcp_client.*"sctp"/)
  assert.match(byFlag.prot, /unknown flag; did you mean --port\?/)
  assert.match(byFlag.bogus, /unknown flag$/)
  assert.match(byFlag.name, /letters, digits/)
  assert.match(byFlag.retry, /true or false.*"perhaps"/)
  assert.match(byFlag['no-host'], /not a boolean/)
  assert.match(byFlag['retry-delay'], /duration/)
  assert.match(byFlag['log-level'], /missing value/)
  assert.match(byFlag.distribution, /missing value/)
  assert.match(byFlag.workername, /required/)
  assert.ok(err.problems.some((p) => !p.flag && /positional.*"stray"/.test(p.message)))
  for (const flag of Object.keys(byFlag)) assert.ok(err.message.includes(`--${flag}: `), flag)
  assert.equal(err.problems.length, Object.keys(byFlag).length + 1)
})

test('out of range port and missing value at the very end', () => {
  const err = problemsOf(() => parse(['--port', '70000', '--host']))
  assert.deepEqual(err.problems.map((p) => p.flag).sort(), ['host', 'port'])
  assert.match(err.message, /--port: must be between 0 and 65535, got "70000"/)
  assert.match(err.message, /--host: missing value/)
})

class SecretConfig extends LoadBalancerConfig {
  static flags = LoadBalancerConfig.extendFlags({
    mongoUri: {
      type: 'string',
      secret: true,
      env: 'MONGODB_URI',
      default: 'mongodb://admin:defaultpw@db',
      description: 'MongoDB connection string',
      validate: (uri) => uri.startsWith('mongodb') ? undefined : `not a MongoDB URI: ${uri}`
    },
    pin: { type: 'integer', secret: true, min: 1000 }
  })
}

test('secret values never appear in errors, help or inspect', () => {
  const err = problemsOf(() => SecretConfig.parse([...W, '--mongo-uri', 'postgres://u:hunter2@h', '--pin', '42'], {}))
  assert.match(err.message, /--mongo-uri: not a MongoDB URI/)
  assert.match(err.message, /--pin: must be at least 1000/)
  assert.ok(!err.message.includes('hunter2'))
  assert.ok(!err.message.includes('42'))
  assert.ok(!JSON.stringify(err.problems).includes('hunter2'))
  const dashed = problemsOf(() => SecretConfig.parse([...W, '--pin', '-hunter2'], {}))
  assert.ok(!dashed.message.includes('hunter2'))
  const fromEnv = problemsOf(() => SecretConfig.parse([...W], { MONGODB_URI: 'ftp://hunter2' }))
  assert.ok(!fromEnv.message.includes('hunter2'))
  const help = new SecretConfig([]).help()
  assert.match(help, /--mongo-uri <string>/)
  assert.ok(!help.includes('defaultpw'))
  const config = SecretConfig.parse([...W], { MONGODB_URI: 'mongodb://u:hunter2@h' })
  assert.equal(config.mongoUri, 'mongodb://u:hunter2@h')
  assert.ok(!util.inspect(config).includes('hunter2'))
})

test('help() lists every flag with aliases, type, default and choices', () => {
  const help = new LoadBalancerConfig([]).help()
  assert.match(help, /^Usage: collector \[options\]/)
  for (const group of ['Listener:', 'Workers:', 'General:']) assert.ok(help.includes(group), group)
  for (const def of Object.keys(LoadBalancerConfig.flags)) {
    const kebab = def.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
    assert.ok(help.includes(`--${kebab}`), kebab)
  }
  assert.match(help, /-p, --port <port>/)
  assert.match(help, /-w, --workername, --worker <path>/)
  assert.match(help, /-i, --instances <integer\|auto>/)
  assert.match(help, /--retry, --no-retry/)
  assert.match(help, /choices: udp, tcp_server, tcp_client; default: udp/)
  assert.match(help, /default: 5s/)
  assert.match(help, /required/)
})

test('--help skips the required check', () => {
  assert.equal(LoadBalancerConfig.parse(['--help']).help, true)
})

test('the result is deep-frozen and cached', () => {
  class ListConfig extends LoadBalancerConfig {
    static flags = LoadBalancerConfig.extendFlags({ tags: { type: 'list', default: 'a,b' } })
  }
  const loader = new ListConfig([...W])
  const config = loader.getConfig()
  assert.equal(loader.getConfig(), config)
  assert.ok(Object.isFrozen(config))
  assert.ok(Object.isFrozen(config.tags))
  assert.throws(() => { config.port = 1 }, TypeError)
  assert.throws(() => config.tags.push('c'), TypeError)
  const bad = new LoadBalancerConfig(['--port', 'x'])
  assert.throws(() => bad.getConfig(), { code: 'ERR_INVALID_CONFIG' })
  assert.throws(() => bad.getConfig(), { code: 'ERR_INVALID_CONFIG' })
})

test('cross-flag validate(): base contradictions and subclass additions', () => {
  const udpFraming = problemsOf(() => parse(['--framing', 'octet-counting']))
  assert.deepEqual(udpFraming.problems.map((p) => p.flag), ['framing'])
  assert.equal(parse(['--protocol', 'tcp_server', '--framing', 'auto']).framing, 'auto')
  const client = problemsOf(() => parse(['--protocol', 'tcp_client']))
  assert.deepEqual(client.problems.map((p) => p.flag), ['port'])
  const offAndOn = problemsOf(() => parse(['--no-buffer', '--buffer-dir', '/tmp/x', '--buffer-sync', 'batch']))
  assert.deepEqual(offAndOn.problems.map((p) => [p.flag, p.message]), [['no-buffer', 'turns the disk buffer off, yet --buffer-dir, --buffer-sync configure it']])
  const onePort = problemsOf(() => parse(['--protocol', 'tcp_server', '--port', '5514', '--metrics-port', '5514']))
  assert.deepEqual(onePort.problems.map((p) => p.flag), ['metrics-port'], 'two TCP listeners on one port')
  assert.equal(parse(['--port', '5514', '--metrics-port', '5514']).metricsPort, 5514, 'UDP and the TCP endpoint share a number')
  assert.equal(parse(['--protocol', 'tcp_server', '--port', '0', '--metrics-port', '0']).metricsPort, 0, 'two free ports')

  class Ranged extends LoadBalancerConfig {
    validate (config, given) {
      const problems = super.validate(config, given)
      if (config.batchSize > config.maxInFlight) problems.push({ flag: 'batch-size', message: 'larger than --max-in-flight' })
      return problems
    }
  }
  const err = problemsOf(() => Ranged.parse([...W, '--batch-size', '100', '--max-in-flight', '10']))
  assert.deepEqual(err.problems.map((p) => p.flag), ['batch-size'])
})

test('subclasses add, override and remove flags without touching the parent', () => {
  const parentFlags = LoadBalancerConfig.flags
  const parentSnapshot = JSON.stringify(parentFlags)
  const parentDefaults = new LoadBalancerConfig([]).getDefault()

  class RtcpConfig extends LoadBalancerConfig {
    static usage = 'collector rtcp [options]'
    static flags = LoadBalancerConfig.extendFlags({
      port: { default: 5005 },
      workername: { required: false, default: 'rtcp-worker.js' },
      streamTimeout: { type: 'duration', default: 60000, description: 'a stream with no packet for this long has ended' },
      help: null
    })
  }
  class SyslogConfig extends LoadBalancerConfig {
    static flags = LoadBalancerConfig.extendFlags({
      protocol: { default: 'tcp_server' },
      framing: { default: 'auto', choices: ['auto', 'newline'] }
    })
  }
  class TlsRtcpConfig extends RtcpConfig {
    static flags = RtcpConfig.extendFlags({ port: { default: 5006 }, cert: { type: 'path', required: true } })
  }

  const rtcp = RtcpConfig.parse([])
  assert.equal(rtcp.port, 5005)
  assert.equal(rtcp.streamTimeout, 60000)
  assert.equal(rtcp.worker, path.resolve('rtcp-worker.js'))
  assert.equal('help' in rtcp, false)
  assert.equal(RtcpConfig.parse(['-p', '9', '--stream-timeout', '5s']).streamTimeout, 5000)
  assert.equal(RtcpConfig.flags.port.alias, 'p') // merged, not replaced
  assert.equal(RtcpConfig.flags.port.type, 'port')
  assert.match(new RtcpConfig([]).help(), /^Usage: collector rtcp/)
  assert.throws(() => RtcpConfig.parse(['--help']), /--help: unknown flag/)

  const syslog = SyslogConfig.parse([...W])
  assert.equal(syslog.protocol, 'tcp_server')
  assert.equal(syslog.framing, 'auto')
  assert.throws(() => SyslogConfig.parse([...W, '--framing', 'length-prefixed']), /one of auto, newline/)

  const tls = TlsRtcpConfig.parse(['--cert', 'c.pem'])
  assert.equal(tls.port, 5006)
  assert.equal(tls.streamTimeout, 60000)
  assert.throws(() => TlsRtcpConfig.parse([]), /--cert: is required/)
  assert.equal(RtcpConfig.parse([]).port, 5005)

  assert.equal(LoadBalancerConfig.flags, parentFlags)
  assert.equal(JSON.stringify(LoadBalancerConfig.flags), parentSnapshot)
  assert.deepEqual(new LoadBalancerConfig([]).getDefault(), parentDefaults)
  assert.equal('streamTimeout' in LoadBalancerConfig.flags, false)
  assert.equal(parse([]).port, 0)
  assert.equal(parse([]).protocol, 'udp')
  assert.throws(() => LoadBalancerConfig.parse([]), /--workername: is required/)
  assert.throws(() => LoadBalancerConfig.parse([...W, '--stream-timeout', '1s']), /--stream-timeout: unknown flag/)
})

test('flag declarations are frozen, so a subclass cannot mutate them', () => {
  assert.ok(Object.isFrozen(LoadBalancerConfig.flags))
  assert.ok(Object.isFrozen(LoadBalancerConfig.flags.port))
  assert.throws(() => { LoadBalancerConfig.flags.port.default = 1 }, TypeError)
})

test('bad declarations fail where the subclass is declared', () => {
  assert.throws(() => LoadBalancerConfig.extendFlags({ x: { type: 'uuid' } }), /unknown flag type "uuid"/)
  assert.throws(() => LoadBalancerConfig.extendFlags({ x: { alias: 'p' } }), /both use the name p/)
  assert.throws(() => LoadBalancerConfig.extendFlags({ x: { type: 'port', default: 99999 } }), /default must be between/)
  assert.throws(() => LoadBalancerConfig.extendFlags({ x: { defualt: 1 } }), /unknown definition key/)
})

test('--udp-receiver picks the UDP receive path; an unknown one is refused by name', () => {
  const config = new LoadBalancerConfig(['-w', WORKER, '--udp-receiver', 'dgram'], {}).getConfig()
  assert.equal(config.udpReceiver, 'dgram')
  assert.throws(() => new LoadBalancerConfig(['-w', WORKER, '--udp-receiver', 'kernel'], {}).getConfig(),
    (err) => err.code === 'ERR_INVALID_CONFIG' && /--udp-receiver: must be one of auto, native, dgram/.test(err.message))
})

test('a bare duration is milliseconds in every command; a range error says so and shows the bound with its unit', () => {
  const lb = LoadBalancerConfig.parse([...W, '--retry-delay', '250', '--drain-timeout', '5s'], {})
  assert.equal(lb.retryDelay, 250)
  assert.equal(lb.drainTimeout, 5000)
  const simulate = require('../../app/commands/simulate').Config
  assert.equal(simulate.parse(['--target', '127.0.0.1:9', '--duration', '2s'], {}).duration, 2000)
  assert.equal(simulate.parse(['--target', '127.0.0.1:9', '--duration', '1500'], {}).duration, 1500)
  const err = problemsOf(() => simulate.parse(['--target', '127.0.0.1:9', '--duration', '5'], {}))
  assert.match(err.message, /--duration: must be at least 1s \(a bare number is milliseconds\), got "5"/)
  const top = problemsOf(() => LoadBalancerConfig.parse([...W, '--retry-delay', '0'], {}))
  assert.match(top.message, /--retry-delay: must be between 1ms and 1h \(a bare number is milliseconds\)/)
})

test('durations take days: 1d is 86,400,000 ms and prints back as 1d', () => {
  assert.deepEqual(flagTypes.duration.parse('1d'), { value: 86400000 })
  assert.deepEqual(flagTypes.duration.parse('1.5d'), { value: 129600000 })
  assert.equal(flagTypes.duration.format(2 * 86400000), '2d')
  assert.equal(flagTypes.duration.format(3600000), '1h')
})
