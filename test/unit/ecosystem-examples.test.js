'use strict'

// The PM2 ecosystem files under examples/ are what users copy: their apps
// must start the package's entry with flags the collector accepts, and the
// multi-host one must be a deploy section pm2 deploy takes.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { loadCollector } = require('../../app/collector-registry')

const EXAMPLES = path.join(__dirname, '..', '..', 'examples')
const FILES = ['ecosystem.config.js', 'ecosystem.multi-host.config.js']

for (const file of FILES) {
  test(`${file}: every app runs the entry with flags its collector accepts`, () => {
    const { apps } = require(path.join(EXAMPLES, file))
    assert.ok(apps.length > 0)
    for (const app of apps) {
      assert.ok(fs.existsSync(app.script), `${app.name}: ${app.script} exists`)
      assert.equal(app.exec_mode, 'fork', 'the collector forks its own workers: PM2 cluster mode would start N masters')
      const [target, ...flags] = app.args
      const mod = loadCollector(target)
      const config = new mod.Config(flags, {}).getConfig()
      assert.equal(config.name, app.name, 'the collector is named as the PM2 app')
      assert.ok(app.kill_timeout > 30000, 'PM2 waits for the drain before it kills')
      assert.ok(!app.args.some((arg) => /mongodb(\+srv)?:\/\//.test(arg)), 'no connection string in argv (ps shows it)')
    }
  })
}

test('ecosystem.multi-host.config.js: the same app on every host, listening where a balancer reaches it', () => {
  const { apps, deploy } = require(path.join(EXAMPLES, 'ecosystem.multi-host.config.js'))
  const production = deploy.production
  for (const key of ['user', 'host', 'ref', 'repo', 'path', 'post-deploy']) assert.ok(production[key], `deploy.production.${key}`)
  assert.ok(Array.isArray(production.host) && production.host.length >= 2, 'several hosts')
  assert.match(production['post-deploy'], /pm2 startOrReload ecosystem\.config\.js --update-env/, 'post-deploy starts the project\'s ecosystem file and takes the host\'s environment')
  const [target, ...flags] = apps[0].args
  const config = new (loadCollector(target).Config)(flags, {}).getConfig()
  assert.equal(config.host, '0.0.0.0', 'reachable from the balancer')
  assert.ok(config.metricsPort > 0, 'a /readyz for the balancer\'s health check')
  assert.equal(config.metricsHost, '0.0.0.0')
})
