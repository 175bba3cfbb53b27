'use strict'
// The config's flags and LoadBalancer's own checks (lib/master/options.js) must
// agree: every value the config accepts, LoadBalancer accepts, and what is
// out of LoadBalancer's range the config refuses (exit 2 from a CLI, not a
// crash loop under PM2). Walks the declarations rather than listing cases.
const test = require('node:test')
const assert = require('node:assert/strict')
const { LoadBalancer, LoadBalancerConfig, InvalidConfigError, InvalidOptionError, protocols } = require('../..')
const { OPTIONS, DEFAULTS, INTEGER_RANGES } = require('../../lib/master/options')
const { choicesOf } = require('../../configs/flag-types')
const { optionsTable } = require('../../app/option-docs')
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

test('the README\'s options table is the one rendered from the declarations (npm run docs)', () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8')
  assert.ok(readme.includes(BUILT_IN_TABLE), 'README options table is stale: run npm run docs')
  for (const name of Object.keys(OPTIONS)) assert.ok(BUILT_IN_TABLE.includes(`| \`${name}\` |`), name)
})
