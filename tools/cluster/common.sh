# What the cluster scripts of this folder share; sourced, not run.

port_free() {
    # Nothing listens on loopback port $1 (a cluster left running, or
    # someone else's server).
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
