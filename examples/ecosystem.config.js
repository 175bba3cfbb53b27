'use strict'
// PM2 ecosystem file for the RTCP collector:
//   MONGODB_URI=mongodb://db.example:27017/voip pm2 start examples/ecosystem.config.js
// Fork mode: the collector forks its own workers and distributes to them.

module.exports = {
  apps: [{
    name: 'rtcp',
    script: require.resolve('collector-cluster/entry'), // the package's PM2 entry: `<collector> [flags]`
    args: ['rtcp', '--name', 'rtcp', '--host', '0.0.0.0', '--port', '5005', '--instances', '4'],
    exec_mode: 'fork',
    wait_ready: true, // ready once bound and every worker is online
    listen_timeout: 60000,
    kill_timeout: 35000, // SIGINT drains: stop receiving, process, flush, close
    autorestart: true,
    env: { MONGODB_URI: process.env.MONGODB_URI } // never in args: ps shows args
  }]
}
