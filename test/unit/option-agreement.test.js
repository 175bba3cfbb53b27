'use strict'
// The config's flags and LoadBalancer's own checks (lib/master/options.js) must
// agree: every value the config accepts, LoadBalancer accepts, and what is
// out of LoadBalancer's range the config refuses (exit 2 from a CLI, not a
// crash loop under PM2). Walks the declarations rather than listing cases.
const test = require('node:test')
const assert = require('node:assert/strict')
const { LoadBalancer, LoadBalancerConfig, InvalidConfigError, InvalidOptionError, protocols } = require('../..')
const { OPTIONS, DEFAULTS, INTEGER_RANGES } = require('../../lib/master/options')
const { choicesOf } = require('../../lib/shared/value-types')
const { optionsTable, docFiles } = require('../../app/doc-tables')
const fs = require('node:fs')
const path = require('node:path')
const { COUNTING } = require('../helpers/lb')

const flags = LoadBalancerConfig.flags
// Rendered before a test registers a protocol of its own.
const BUILT_IN_TABLE = optionsTable()
const optionFlags = Object.keys(flags).filter((name) => Object.hasOwn(DEFAULTS, name))
const kebab = (name) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)

// What a value needs beside it to pass the config's cross-flag checks.
function companions (name, value) {
  if (name === 'framing') return ['--protocol', 'tcp_server']
  if (name === 'protocol' && value === 'tcp_client') return ['--port', '9']
  return []
}

function parse (name, value) {
  return LoadBalancerConfig.parse(['-w', COUNTING, `--${kebab(name)}`, String(value), ...companions(name, value)], {})
}

test('the flags that are LoadBalancer options are found (the walk below covers them)', () => {
  for (const name of ['port', 'instances', 'retryDelay', 'idleTimeout', 'maxFrameBytes', 'maxConnections', 'maxInFlight', 'batchSize', 'framing', 'distribution', 'protocol', 'udpReceiver']) {
    assert.ok(optionFlags.includes(name), name)
  }
})

test('each such flag\'s default is LoadBalancer\'s default', () => {
  for (const name of optionFlags) assert.deepEqual(flags[name].default, DEFAULTS[name], name)
})

test('integer flags: the config takes exactly LoadBalancer\'s range, and LoadBalancer takes what the config gives at both ends', () => {
  for (const name of optionFlags.filter((n) => INTEGER_RANGES[n])) {
    const [min, max] = INTEGER_RANGES[name]
    const flag = flags[name]
    assert.equal(flag.min ?? 0, min, `${name} min`)
    assert.equal(flag.max ?? 65535, max, `${name} max`)
    for (const value of [min, max]) {
      const config = parse(name, value)
      assert.equal(config[name], value, `${name} ${value}`)
      assert.doesNotThrow(() => new LoadBalancer(config), `LoadBalancer refuses ${name} ${value} that the config accepted`)
    }
    for (const value of [min - 1, max + 1]) {
      assert.throws(() => parse(name, value), InvalidConfigError, `the config accepts ${name} ${value}, which LoadBalancer refuses`)
    }
  }
})

test('choice flags: every choice the config offers LoadBalancer accepts', () => {
  for (const name of optionFlags.filter((n) => flags[n].choices)) {
    const choices = choicesOf(flags[name])
    assert.ok(choices.length > 0, name)
    for (const choice of choices) {
      const config = parse(name, choice)
      assert.equal(config[name], choice)
      assert.doesNotThrow(() => new LoadBalancer(config), `LoadBalancer refuses ${name} ${choice}`)
    }
  }
  assert.ok(choicesOf(flags.framing).includes('length-prefixed:16'), 'documented framings are flags too')
})

test('every declared option that has a flag: the flag carries its default, range, aliases, description and environment variable', () => {
  for (const [name, decl] of Object.entries(OPTIONS)) {
    if (!decl.flag) continue
    const flag = flags[decl.flag]
    assert.ok(flag, `option ${name} has no flag --${decl.flag}`)
    assert.equal(flag.default, decl.default, name)
    assert.equal(flag.description.startsWith(decl.description.replace(/ \(required\)$/, '')), true, name)
    assert.deepEqual([].concat(flag.alias || []), [].concat(decl.alias || []), name)
    assert.match(flag.env, /^COLLECTOR_[A-Z_]+$/, name)
    if (decl.range) assert.deepEqual([flag.min, flag.max], decl.range, name)
  }
  const flagOnly = Object.keys(flags).filter((f) => !Object.values(OPTIONS).some((d) => d.flag === f))
  assert.deepEqual(flagOnly.sort(), ['help', 'logFormat', 'logLevel'], 'flags that are not LoadBalancer options')
})

test('a protocol registered after the flags were declared can be chosen on the command line', () => {
  const name = `test_proto_${process.pid}`
  assert.throws(() => parse('protocol', name), InvalidConfigError)
  protocols.register(name, { start: async () => ({ address: () => ({}), close: async () => {} }) })
  const config = parse('protocol', name)
  assert.equal(config.protocol, name)
  assert.doesNotThrow(() => new LoadBalancer(config))
  assert.match(new LoadBalancerConfig([]).help(), new RegExp(`choices: [^\\n]*${name}`))
})

test('unknown option keys are refused with the closest known one; a subclass\'s declared keys and a parsed config\'s own flags pass', () => {
  assert.throws(() => new LoadBalancer({ worker: COUNTING, batchsize: 1 }), (err) => {
    assert.ok(err instanceof InvalidOptionError)
    assert.equal(err.code, 'ERR_INVALID_OPTION')
    assert.equal(err.option, 'batchsize')
    assert.equal(err.closest, 'batchSize')
    assert.match(err.message, /"batchsize" is unknown; did you mean "batchSize"\?/)
    return true
  })
  assert.throws(() => new LoadBalancer({ worker: COUNTING, instnces: 4 }), /did you mean "instances"/)
  assert.throws(() => new LoadBalancer({ worker: COUNTING, zzzzzz: 4 }), (err) => err.closest === undefined && /"zzzzzz" is unknown$/.test(err.message))
  class Tagged extends LoadBalancer { static optionKeys = [...super.optionKeys, 'tag'] }
  assert.equal(new Tagged({ worker: COUNTING, tag: 'x' }).options.tag, 'x')
  assert.throws(() => new Tagged({ worker: COUNTING, tags: 'x' }), /did you mean "tag"/)
  class TagConfig extends LoadBalancerConfig { static flags = LoadBalancerConfig.extendFlags({ tag: { type: 'string', default: '' } }) }
  const config = TagConfig.parse(['-w', COUNTING], {})
  assert.equal(config.tag, '', 'an empty-string default is a default, not a missing value')
  assert.doesNotThrow(() => new LoadBalancer({ ...config, logger: undefined }))
})

test('built-in flags come from the environment, argv first', () => {
  const env = { COLLECTOR_PORT: '7001', COLLECTOR_INSTANCES: '3', COLLECTOR_DISTRIBUTION: 'hash', COLLECTOR_RETRY: 'false' }
  const fromEnv = LoadBalancerConfig.parse(['-w', COUNTING], env)
  assert.deepEqual([fromEnv.port, fromEnv.instances, fromEnv.distribution, fromEnv.retry], [7001, 3, 'hash', false])
  assert.equal(LoadBalancerConfig.parse(['-w', COUNTING, '-p', '7002'], env).port, 7002)
  assert.throws(() => LoadBalancerConfig.parse(['-w', COUNTING], { COLLECTOR_PORT: '70000' }), /environment variable COLLECTOR_PORT/)
})

// The doc files (README.md, docs/*.md) that show `table` as rendered now.
function docsShowing (table) {
  return docFiles().filter((file) => fs.readFileSync(file, 'utf8').includes(table)).map((file) => path.relative(path.join(__dirname, '..', '..'), file))
}

test('the docs\' options table is the one rendered from the declarations (npm run docs), in one doc file', () => {
  assert.deepEqual(docsShowing(BUILT_IN_TABLE), ['docs/options.md'], 'the options table is stale: run npm run docs')
  for (const name of Object.keys(OPTIONS)) assert.ok(BUILT_IN_TABLE.includes(`| \`${name}\` |`), name)
})

// Collectors and their workers: each collector's settings are declared once
// (collectors/*-settings.js, workers/mongo-settings.js); its config's flags,
// its defaults, the keys it forwards to its workers and the workers'
// defaults must all be that declaration, and both the config and the code
// must refuse what it refuses.
const MongoCollector = require('../../lib/collector/mongo-collector')
const MongoCollectorConfig = require('../../lib/collector/mongo-collector-config')
const MongoWorker = require('../../workers/mongo-worker')
const CounterWorker = require('../../workers/counter-worker')
const StreamWorker = require('../../workers/stream-worker')
const StreamSweeper = require('../../workers/storage/stream-sweeper')
const rtcp = require('../../collectors/rtcp')
const syslog = require('../../collectors/syslog')
const { forwardedKeys, settingsDefaults } = require('../../lib/shared/settings')
const { settingsTables } = require('../../app/doc-tables')

const COLLECTORS = [
  { name: 'mongo', Collector: MongoCollector, Config: MongoCollectorConfig, Worker: MongoWorker, argv: ['-w', COUNTING], options: { worker: COUNTING } },
  { name: 'rtcp', Collector: rtcp.Collector, Config: rtcp.Config, Worker: rtcp.Worker, argv: [], options: {} },
  { name: 'syslog', Collector: syslog.Collector, Config: syslog.Config, Worker: syslog.Worker, argv: [], options: {} }
]
const WORKERS = [MongoWorker, CounterWorker, StreamWorker, rtcp.Worker, syslog.Worker]

function parseSetting (c, name, value) {
  return c.Config.parse([...c.argv, `--${kebab(name)}`, [].concat(value).join(',')], {})
}

// Each setting's values at the ends of its range (or its choices), and just past them.
function edgesOf (decl) {
  if (decl.range) return { good: decl.range, bad: [decl.range[0] - 1, decl.range[1] + 1] }
  const choices = typeof decl.choices === 'function' ? decl.choices() : decl.choices
  if (!choices) return null
  return decl.type === 'list' ? { good: [choices, [choices[0]]], bad: [['not-a-choice']] } : { good: choices, bad: ['not-a-choice'] }
}

function refusedAsOption (fn, name, what) {
  assert.throws(fn, (err) => err instanceof InvalidOptionError && err.code === 'ERR_INVALID_OPTION' && err.option === name, what)
}

test('collectors: every worker setting\'s flag default is the worker\'s default and the declaration\'s', () => {
  for (const c of COLLECTORS) {
    const { worker, master } = c.Collector.settings
    assert.equal(c.Worker.settings, worker, `${c.name}: the worker and the collector share one declaration`)
    const configDefaults = new c.Config(c.argv).getDefault()
    const workerSettings = new c.Worker({}).settings
    for (const [name, decl] of Object.entries(worker)) {
      assert.deepEqual(workerSettings[name], decl.default, `${c.name} worker default of ${name}`)
      // (retryDelay is also the LoadBalancer's own option, of the listener: not the workers')
      if (decl.flag === false) assert.ok(!(name in c.Config.flags) || name in OPTIONS, `${c.name}: ${name} is code only, yet a flag`)
      else assert.deepEqual(configDefaults[name], decl.default, `${c.name} flag default of ${name}`)
    }
    for (const [name, decl] of Object.entries(master)) if (decl.flag !== false) assert.deepEqual(configDefaults[name], decl.default, `${c.name} flag default of ${name}`)
  }
  for (const Worker of WORKERS) assert.deepEqual(Object.entries(settingsDefaults(Worker.settings)).filter(([name, value]) => new Worker({}).settings[name] !== value), [], Worker.name)
})

test('collectors: their LoadBalancer defaults are the config\'s and the collector\'s, from the one declaration', () => {
  for (const c of COLLECTORS) {
    const configDefaults = new c.Config(c.argv).getDefault()
    const collector = new c.Collector(c.options)
    for (const [name, value] of Object.entries(c.Collector.settings.defaults)) {
      assert.deepEqual(configDefaults[name], value, `${c.name} config default of ${name}`)
      assert.deepEqual(collector.options[name], value, `${c.name} collector default of ${name}`)
    }
    assert.equal(c.Config.flags.workername.required, c.name === 'mongo', `${c.name}: --workername required only without a worker of its own`)
  }
})

test('collectors: range ends and choices are accepted by the config, the collector and the worker; one past, refused by all three', () => {
  for (const c of COLLECTORS) {
    for (const [where, table] of Object.entries({ master: c.Collector.settings.master, worker: c.Collector.settings.worker })) {
      for (const [name, decl] of Object.entries(table)) {
        const edges = edgesOf(decl)
        // newKeyShares is the collector's to set (its instances), whatever code passes.
        if (!edges || name === 'newKeyShares') continue
        const hasFlag = decl.flag !== false
        const asOptions = (value) => hasFlag ? { ...c.options, [name]: value } : { ...c.options, workerOptions: { [name]: value } }
        for (const value of edges.good) {
          const what = `${c.name} ${name} ${value}`
          if (hasFlag) assert.deepEqual(parseSetting(c, name, value)[name], value, what)
          const collector = new c.Collector(hasFlag ? parseSetting(c, name, value) : asOptions(value))
          if (where === 'worker') {
            assert.deepEqual(collector.options.workerOptions[name], value, `${what}: forwarded`)
            assert.deepEqual(new c.Worker({ [name]: value }).settings[name], value, `${what}: worker`)
          }
        }
        for (const value of edges.bad) {
          const what = `${c.name} ${name} ${value}`
          if (hasFlag) assert.throws(() => parseSetting(c, name, value), InvalidConfigError, `${what}: config`)
          refusedAsOption(() => new c.Collector(asOptions(value)), name, `${what}: collector`)
          if (where === 'worker') refusedAsOption(() => new c.Worker({ [name]: value }), name, `${what}: worker`)
        }
      }
    }
  }
})

test('collectors forward exactly their declared worker settings that have a flag: the config\'s own flags', () => {
  const lbFlags = new Set(Object.keys(LoadBalancerConfig.flags))
  for (const c of COLLECTORS) {
    const { worker, master } = c.Collector.settings
    const declared = forwardedKeys(worker)
    assert.deepEqual([...c.Collector.workerOptionKeys].sort(), [...declared].sort(), c.name)
    const ownFlags = Object.keys(c.Config.flags).filter((f) => !lbFlags.has(f) && !Object.hasOwn(master, f))
    assert.deepEqual(ownFlags.sort(), [...declared].sort(), `${c.name}: the config's flags beyond the LoadBalancer's and the master's are the forwarded settings`)
    // Every one given, each at a value of its own: all of them, and nothing else, reach the workers.
    const given = Object.fromEntries(declared.map((name) => [name, worker[name].range ? worker[name].range[0] : worker[name].default ?? 'x']))
    const collector = new c.Collector({ ...c.options, ...given })
    const { newKeyShares, ...forwarded } = collector.options.workerOptions
    assert.deepEqual(forwarded, given, c.name)
    if (worker.newKeyShares) assert.equal(newKeyShares, collector.options.instances, `${c.name}: its workers share the new-key cap`)
    refusedAsOption(() => new c.Collector({ ...c.options, flushTimeout: 1000 }), 'flushTimeout', `${c.name}: a code-only setting is not a collector option`)
  }
})

test('a bad setting in code gets the InvalidOptionError the config\'s range implies: RtcpCollector, RtcpWorker, and the sweeper has no defaults of its own', () => {
  for (const make of [() => new rtcp.Collector({ streamTimeout: -1 }), () => new rtcp.Worker({ streamTimeout: -1 })]) {
    assert.throws(make, (err) => err instanceof InvalidOptionError && /"streamTimeout" must be an integer from 1 to 86400000 \(ms\), got -1/.test(err.message))
  }
  assert.throws(() => rtcp.Config.parse(['--stream-timeout', '0'], {}), /--stream-timeout: must be between 1ms and 1d/)
  assert.throws(() => new StreamSweeper({}, { streamTimeout: 60000 }), (err) => err instanceof InvalidOptionError && err.option === 'byeGrace')
})

test('the docs\' collector settings tables are the ones rendered from the declarations (npm run docs), in one doc file', () => {
  for (const [id, table] of Object.entries(settingsTables())) assert.deepEqual(docsShowing(table), ['docs/collectors.md'], `the ${id} settings table is stale: run npm run docs`)
  const tables = Object.values(settingsTables()).join('\n')
  for (const c of COLLECTORS) for (const name of Object.keys(c.Collector.settings.worker)) assert.ok(tables.includes(`| \`${name}\` |`), `${c.name} ${name}`)
})
