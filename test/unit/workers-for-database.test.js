'use strict'

// How many workers a MongoDB collector starts when not told (instances
// 'auto'): half the CPUs, at least one, when its database runs on this
// host; one per CPU otherwise (lib/collector/workers-for-database.js).
const test = require('node:test')
const assert = require('node:assert/strict')
const { databaseOnThisHost, workersForDatabase } = require('../../lib/collector/workers-for-database')

test('a database on this host: the embedded server, loopback hosts, unix sockets', () => {
  const here = ['mongodb://127.0.0.1:27017/db', 'mongodb://localhost', 'mongodb://user@localhost:27017,127.0.0.2:27018/db?replicaSet=rs', 'mongodb://[::1]:27017', 'mongodb://%2Ftmp%2Fmongodb-27017.sock/db', 'mongodb://LOCALHOST:1']
  for (const uri of here) assert.equal(databaseOnThisHost(uri), true, uri)
  const elsewhere = ['mongodb://db.example.net:27017', 'mongodb://localhost:27017,db2.example.net:27017', 'mongodb+srv://cluster0.example.net/db', 'mongodb://10.0.0.5', 'mongodb://[fd00::1]:27017', 'not a uri', 'mongodb://%zz:27017']
  for (const uri of elsewhere) assert.equal(databaseOnThisHost(uri), false, uri)
  assert.equal(databaseOnThisHost('mongodb://127.0.0.1:41234', true), true, 'the embedded server')
})

test('half the CPUs, at least one, for a database here; all of them for one elsewhere', () => {
  assert.deepEqual([1, 2, 3, 4, 16].map((cpus) => workersForDatabase('mongodb://127.0.0.1', false, cpus)), [1, 1, 1, 2, 8])
  assert.deepEqual([1, 2, 16].map((cpus) => workersForDatabase('mongodb://db.example.net', false, cpus)), [1, 2, 16])
})
