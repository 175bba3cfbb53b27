'use strict'
// A real Prometheus server (Debian's `prometheus`, scrape interval 1 s) on
// a free loopback port, stopped and its data removed by t.after.
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const yaml = require('js-yaml')
const { waitFor } = require('./wait-for')
const { freePort } = require('./ports')

const PROMETHEUS = 'prometheus'
const HOST = '127.0.0.1'
const available = spawnSync(PROMETHEUS, ['--version']).status === 0
const SKIP = !available && 'prometheus is not installed (Debian package prometheus; .ci/run installs it)'

/**
 * @param {object} t the test
 * @param {string|object[]} jobs a target (`host:port`, one plain job named
 *   `collector`) or Prometheus scrape_configs entries
 */
async function startPrometheus (t, jobs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-prom-'))
  const config = path.join(dir, 'prometheus.yml')
  const scrapeConfigs = typeof jobs === 'string' ? [{ job_name: 'collector', static_configs: [{ targets: [jobs] }] }] : jobs
  fs.writeFileSync(config, yaml.dump({ global: { scrape_interval: '1s' }, scrape_configs: scrapeConfigs }))
  const port = await freePort()
  const child = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=${HOST}:${port}`], { stdio: 'ignore' })
  t.after(async () => {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.exitCode !== null ? resolve() : child.once('exit', resolve))
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const api = `http://${HOST}:${port}/api/v1`
  await waitFor(async () => (await fetch(`${api}/status/buildinfo`).catch(() => null))?.ok, { what: 'prometheus to answer', timeout: 30000, interval: 200 })
  const targets = async () => (await (await fetch(`${api}/targets`)).json()).data.activeTargets
  return {
    dir,
    async query (expr) {
      const body = await (await fetch(`${api}/query?query=${encodeURIComponent(expr)}`)).json()
      assert.equal(body.status, 'success', JSON.stringify(body))
      return body.data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }))
    },
    targets,
    async targetUp () {
      return (await targets()).some((tg) => tg.health === 'up')
    },
    /** The job's target once it has been scraped at least once (health 'up' or 'down', with lastError). */
    async scrapedTarget (job) {
      return waitFor(async () => (await targets()).find((tg) => tg.labels.job === job && tg.health !== 'unknown'), { what: `job ${job} to be scraped`, timeout: 30000, interval: 250 })
    }
  }
}

module.exports = { startPrometheus, PROMETHEUS_SKIP: SKIP }
