'use strict'
// PM2 ecosystem file for N collector hosts behind a layer-4 balancer
// (docs/scaling.md). Every host runs the same app; the balancer spreads flows
// over the hosts, MongoDB (a replica set, or a sharded cluster) is shared.
// Copy it into your project (the repository `deploy` names, with
// collector-cluster as a dependency) as ecosystem.config.js, then:
//
//   pm2 deploy ecosystem.config.js production setup   # once
//   pm2 deploy ecosystem.config.js production         # each release
//
// PM2 deploys the hosts one after another and stops at the first that fails,
// so a bad release never reaches all of them. In fork mode startOrReload
// restarts the collector: what the balancer sends the host meanwhile is
// lost, so take the host out of the balancer first (a pre-deploy-local or
// post-deploy step of yours; /readyz answers 503 only once the stop began).
// The connection string lives on each host (in /etc/collector.env, say), never
// in this file or in argv.

const HOSTS = ['collector-1.example.net', 'collector-2.example.net', 'collector-3.example.net']

module.exports = {
  apps: [{
    name: 'rtcp',
    script: require.resolve('collector-cluster/entry'),
    args: [
      'rtcp', '--name', 'rtcp',
      '--host', '0.0.0.0', '--port', '5005', // what the balancer forwards to, source address kept
      '--instances', 'auto',
      '--metrics-port', '9405', '--metrics-host', '0.0.0.0' // /metrics for Prometheus, /readyz for the balancer's health check
    ],
    exec_mode: 'fork', // the collector forks its own workers
    wait_ready: true,
    listen_timeout: 60000,
    kill_timeout: 35000, // SIGINT drains before PM2 kills
    autorestart: true
  }],
  deploy: {
    production: {
      user: 'collector',
      host: HOSTS,
      ref: 'origin/main',
      repo: 'git@git.example.net:ops/voip-collectors.git', // your project, with collector-cluster as a dependency
      path: '/srv/collectors',
      'post-deploy': 'npm ci --omit=dev && set -a && . /etc/collector.env && set +a && pm2 startOrReload ecosystem.config.js --update-env && pm2 save'
    }
  }
}
