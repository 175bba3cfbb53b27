module collector-cluster/test/oracles/go-syslog

go 1.21

require github.com/influxdata/go-syslog/v3 v3.0.0
