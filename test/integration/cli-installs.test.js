'use strict'
// An upgrade into a new directory, as an operator meets it: a collector
// started under PM2 by another install of this package (a copy of its
// runtime at another path, sharing node_modules) is listed by this CLI with
// the install it runs from, can be restarted, stopped and deleted from here,
// is never restarted or deleted by a `start` of the same name, and
// `start NAME` moves it to this install with its flags and environment.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const launcher = require('../../app/launcher')
const { readStats } = require('../../app/stats-file')
const { runCli: cli } = require('../helpers/cli')
const { pm2Home } = require('../helpers/pm2-home')

const ROOT = path.join(__dirname, '..', '..')
const ECHO = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
const RUNTIME = ['app', 'bin', 'lib', 'workers', 'configs', 'collectors', 'exceptions', 'index.js', 'package.json']

// Another install: this package's runtime copied beside the PM2 home.
function otherInstall (home) {
  const dir = path.join(path.dirname(home), 'old-install')
  for (const part of RUNTIME) fs.cpSync(path.join(ROOT, part), path.join(dir, part), { recursive: true })
  for (const link of ['node_modules', 'native']) fs.symlinkSync(path.join(ROOT, link), path.join(dir, link))
  return dir
}

function cliOf (install, env, ...args) {
  const child = spawn(process.execPath, [path.join(install, 'bin', 'collector.js'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

test('a collector of another install: listed with its install, not restarted nor deleted by a start of its name, restart/stop work, start NAME moves it here with its flags and environment, delete removes it', { timeout: 180000 }, async (t) => {
  const home = pm2Home(t)
  const env = { ...process.env, PM2_HOME: home, COLLECTOR_STATS_DIR: path.join(path.dirname(home), 'stats'), UPGRADE_MARK: 'kept' }
  const old = otherInstall(home)
  const flags = ['--name', 'up2', '--port', '0', '--instances', '1', '--batch-size', '7']
  const started = await cliOf(old, env, 'start', ECHO, ...flags)
  assert.equal(started.code, 0, started.stderr)
  assert.equal((await cliOf(old, env, 'start', ECHO, '--name', 'up3', '--port', '0', '--instances', '1')).code, 0)

  const [listed] = JSON.parse((await cli(env, 'ls', '--json')).stdout)
  assert.deepEqual([listed.name, listed.status, listed.install], ['up2', 'online', old])
  assert.match((await cli(env, 'ls')).stdout, new RegExp(`up2 .*echo-collector\\.js \\(install ${old}\\)`))

  const clash = await cli(env, 'start', ECHO, '--name', 'up2', '--port', '0')
  assert.equal(clash.code, 1)
  assert.equal(clash.stderr, `collector: a collector named up2 already exists (online, from the install at ${old}); use \`collector restart up2\`, or delete it first (\`collector delete up2\`)\n`)
  const running = await cli(env, 'start', 'up2')
  assert.equal(running.stderr, `collector: collector up2 is running from the install at ${old}; \`collector stop up2\`, then \`collector start up2\` moves it to this install\n`)
  const [still] = await launcher.list({ pm2Home: home })
  assert.deepEqual([still.status, still.pid], ['online', listed.pid], 'the old one kept running, untouched')

  assert.equal((await cli(env, 'restart', 'up2')).code, 0)
  assert.equal((await cli(env, 'stop', 'up2')).code, 0)
  const moved = await cli(env, 'start', 'up2')
  assert.equal(moved.code, 0, moved.stderr)
  const lines = moved.stdout.split('\n')
  assert.equal(lines[0], `moved up2 from the install at ${old} to this one (${ROOT}), with the flags and environment it had`)
  assert.match(lines[1], /^started up2 \(pid \d+\)/)
  const now = (await launcher.list({ pm2Home: home })).find((p) => p.name === 'up2')
  assert.deepEqual([now.status, now.install, now.collector, now.args], ['online', null, ECHO, flags])
  const snap = await readStats('up2', env.COLLECTOR_STATS_DIR)
  assert.deepEqual([snap.state, snap.pid], ['running', now.pid])
  const app = await launcher.describe('up2', { pm2Home: home })
  assert.equal(app.statsDir, env.COLLECTOR_STATS_DIR)
  const raw = await require('../../app/pm2-api').withPm2({ pm2Home: home }, (api) => require('../../app/pm2-api').findApp(api, 'up2'))
  assert.equal(raw.pm2_env.pm_exec_path, launcher.ENTRY)
  assert.equal(raw.pm2_env.env.UPGRADE_MARK, 'kept', 'its environment came along')

  const deleted = await cli(env, 'delete', 'up3')
  assert.equal(deleted.code, 0, deleted.stderr)
  assert.deepEqual((await launcher.list({ pm2Home: home })).map((p) => p.name), ['up2'])

  const lost = await cli(env, 'start', 'up9')
  assert.equal(lost.code, 2)
  assert.match(lost.stderr, /^collector: unknown collector "up9": .*; if up9 is a collector that ran under a PM2 daemon since gone .*`collector start <collector> --name up9 …`.*`pm2 resurrect` if `pm2 save` was run\n$/)

  // A daemon lost with every collector: ls says how they come back.
  assert.equal((await cli(env, 'delete', 'up2')).code, 0)
  assert.match((await cli(env, 'ls')).stdout, /^no collectors \(.*`pm2 resurrect`, if `pm2 save` was run/)
})
