'use strict'
// The config's flags and LoadBalancer's own checks (lib/master/options.js) must
// agree: every value the config accepts, LoadBalancer accepts, and what is
// out of LoadBalancer's range the config refuses (exit 2 from a CLI, not a
// crash loop under PM2). Walks the declarations rather than listing cases.
const test = require('node:test')
const assert = require('node:assert/strict')
const { LoadBalancer, LoadBalancerConfig, InvalidConfigError } = require('..')
const { DEFAULTS, INTEGER_RANGES } = require('../lib/master/options')
const { COUNTING } = require('./helpers/lb')

const flags = LoadBalancerConfig.flags
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
    for (const choice of flags[name].choices) {
      const config = parse(name, choice)
      assert.equal(config[name], choice)
      assert.doesNotThrow(() => new LoadBalancer(config), `LoadBalancer refuses ${name} ${choice}`)
    }
  }
  assert.ok(flags.framing.choices.includes('length-prefixed:16'), 'documented framings are flags too')
})
