'use strict'

// `collector calls --serve` as an operator opens it: a real RTCP collector
// stores four synthetic calls (two clean, two at 10 % loss), the CLI (a
// child process) serves the view, and headless Chromium (Debian
// `chromium`) loads it: its DOM must hold the worst calls, the per-minute
// band chart and one call's charts, and its screenshot the bands' colours.
// With a web config it asks for basic auth, as the metrics endpoint does.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const bcrypt = require('bcryptjs')
const rtcp = require('../../collectors/rtcp')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { sendCalls } = require('../helpers/rtcp-calls')
const { CLI } = require('../helpers/cli')
const { waitFor, streamDocs } = require('../helpers/streams')
const { run } = require('../helpers/rtp-peers')
const { readPng, countColor } = require('../helpers/png')

const CHROMIUM_SKIP = spawnSync('chromium', ['--version']).status !== 0 && 'chromium is not installed (Debian package chromium)'
const media = (lostPerRound) => ({ lostPerRound, jitter: 160, delayMs: 20 })
const CALLS = [0, 0, 25, 25].map((lost, i) => ({ a: 0x9000 + 2 * i, b: 0x9001 + 2 * i, ab: media(lost), ba: media(lost) }))

/** The CLI serving the view: resolves with its URL once it says where. */
async function serveView (t, env, args) {
  const child = spawn(process.execPath, [CLI, 'calls', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => child.exitCode === null && child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d
      const m = /serving the calls at (\S+) /.exec(stdout)
      if (m) resolve(m[1])
    })
    child.on('exit', (code) => reject(new Error(`collector calls --serve exited ${code}: ${stderr}`)))
  })
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
    child.kill('SIGTERM')
    return exited
  }
  return { url, stop }
}

async function chromium (t, ...args) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-chromium-'))
  t.after(() => fs.rmSync(profile, { recursive: true, force: true }))
  const r = await run('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', `--user-data-dir=${profile}`, ...args])
  assert.equal(r.code, 0, r.stderr)
  return r.stdout
}

function get (url, headers = {}) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    }).on('error', reject)
  })
}

test('collector calls --serve: the worst calls, calls by band per minute and one call per minute, as Chromium shows them', { skip: CHROMIUM_SKIP, timeout: 60000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const { sent } = await sendCalls(port, CALLS)
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  const env = { ...process.env, MONGODB_URI: uri }
  const view = await serveView(t, env, ['--serve', '0', '--database', db.databaseName])
  assert.match(view.url, /^http:\/\/127\.0\.0\.1:\d+\/$/, 'bound to loopback unless asked')

  const dom = await chromium(t, '--dump-dom', view.url)
  const rows = dom.match(/<tr><td/g) || []
  assert.equal(rows.length, CALLS.length, 'a row per call')
  assert.match(dom, /<table id="worst">/)
  const bars = (band) => (dom.match(new RegExp(`<rect class="${band}"`, 'g')) || []).length
  assert.ok(bars('good') >= 1 && bars('poor') >= 1, `band bars: good ${bars('good')}, poor ${bars('poor')}`)
  const shot = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-')), 'overview.png')
  await chromium(t, `--screenshot=${shot}`, '--window-size=1100,900', view.url)
  const png = readPng(fs.readFileSync(shot))
  assert.ok(countColor(png, '#d62728') > 100, 'the poor calls\' bar is drawn')
  assert.ok(countColor(png, '#2ca02c') > 100, 'the good calls\' bar is drawn')
  // What only the <style> draws: had its CSP hash not matched, Chromium would have dropped it.
  assert.ok(countColor(png, '#dddddd') > 500, 'the table\'s row borders (the style applies under the CSP)')
  assert.ok(countColor(png, '#9e9e9e') >= 100, 'the legend\'s unknown swatch (a class of the style, not a style attribute)')

  // The worst call (first row) links to its own page.
  const worst = /<a href="\/call\?id=([0-9a-f]{24})">/.exec(dom)[1]
  const docs = await streamDocs(db)
  const lossy = docs.find((d) => String(d._id) === worst)
  assert.ok(lossy.from.quality.loss.last.lost > 0, 'the first row is a lossy call')
  const callDom = await chromium(t, '--dump-dom', `${view.url}call?id=${worst}`)
  for (const chart of ['mos', 'loss', 'jitter']) assert.match(callDom, new RegExp(`<svg id="${chart}"[^]*?<polyline class="${chart}"`), `${chart} per minute`)
  assert.equal((callDom.match(/<polyline class="mos"/g) || []).length, 2, 'one line per side')
  assert.match(callDom, /<p id="verdict">MOS \d\.\d\d \(poor\)/)
  // Each side's clock and codec with where they came from: the SRs' 8 kHz, --codec's G.711.
  assert.match(callDom, /<p id="media">from \d+: clock 8000 Hz \(sender-reports\), codec G\.711 \(default\); to \d+: clock 8000 Hz \(sender-reports\)/)
  const callShot = shot.replace('overview', 'call')
  await chromium(t, `--screenshot=${callShot}`, '--window-size=1100,900', `${view.url}call?id=${worst}`)
  // Both sides' points (one minute: one point each, the second over the first), left of the legends.
  assert.ok(countColor(readPng(fs.readFileSync(callShot)), '#ff7f0e', { maxX: 780 }) >= 3 * 20, 'a point per chart is drawn')
  assert.equal(await get(`${view.url}call?id=nope`), 404)
  assert.equal(await view.stop(), 0, 'Ctrl-C stops it cleanly')
  if (!process.env.KEEP_SCREENSHOTS) fs.rmSync(path.dirname(shot), { recursive: true, force: true })
})

test('collector calls --serve --web-config asks for basic auth, as the metrics endpoint does', { timeout: 30000 }, async (t) => {
  const { uri } = await getTestMongo()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-auth-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const webConfig = path.join(dir, 'web.yml')
  fs.writeFileSync(webConfig, `basic_auth_users:\n  alice: ${bcrypt.hashSync('secret', 4)}\n`)
  const view = await serveView(t, { ...process.env, MONGODB_URI: uri }, ['--serve', '0', '--web-config', webConfig, '--database', 'calls_view_auth'])
  assert.equal(await get(view.url), 401)
  const refused = await fetch(view.url)
  assert.equal(refused.status, 401)
  assert.match(refused.headers.get('content-security-policy'), /default-src 'none'/, 'a refusal has the security headers too')
  assert.equal(refused.headers.get('x-content-type-options'), 'nosniff')
  assert.equal(refused.headers.get('x-frame-options'), 'DENY')
  assert.equal(await get(view.url, { authorization: `Basic ${Buffer.from('alice:wrong').toString('base64')}` }), 401)
  assert.equal(await get(view.url, { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` }), 200)
  assert.equal(await view.stop(), 0)
})
