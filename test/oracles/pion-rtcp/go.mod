module collector-cluster/test/oracles/pion-rtcp

go 1.24.0

require github.com/pion/rtcp v1.2.20
