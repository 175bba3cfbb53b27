// Compiled by test/integration/typings.test.js and run by it with `collector run`: a
// collector written in TypeScript from docs/writing-collectors.md and index.d.ts alone.
import * as path from 'node:path'
import { MongoCollectorConfig } from 'collector-cluster'

export class TallyConfig extends MongoCollectorConfig {
  static usage = 'collector run ./tally [options]'
  static flags = MongoCollectorConfig.extendFlags({
    name: { default: 'tally' },
    workername: { required: false, default: path.join(__dirname, 'worker.js') },
    unit: { type: 'string', default: 'events', group: 'Tally', description: 'suffix of every counter name', choices: ['events', 'hits'] }
  })
}
