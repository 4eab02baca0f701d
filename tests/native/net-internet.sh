# Sourced by net-netd.sh and net-lists.sh: the closed topology's "internet". The caller has
# made $inet (a namespace kept by a sleeper), $dir, the pids array and in_inet(); this joins
# $inet to the current ("host") namespace by the veth up0/up1 (192.0.2.1 / 192.0.2.2), gives
# $inet the addresses the tests name, and starts in it two resolvers that log every query
# (192.0.2.53 upstream, 198.51.100.53 "foreign") and HTTP servers on 8080 and 443 of every
# address. No route leads to any real network.
fake_internet_up() {
        ip link add up0 type veth peer name up1
        ip link set up1 netns "$inet"
        ip addr add 192.0.2.1/24 dev up0
        ip link set up0 up
        for r in 198.51.100.0/24 10.99.0.0/24 169.254.169.254/32; do ip route add "$r" via 192.0.2.2; done
        in_inet ip link set lo up
        in_inet ip addr add 192.0.2.2/24 dev up1
        for a in 192.0.2.10 192.0.2.11 192.0.2.12 192.0.2.13 192.0.2.14 192.0.2.53 198.51.100.53 198.51.100.7 \
                10.99.0.5 169.254.169.254; do
                in_inet ip addr add "$a/32" dev up1
        done
        in_inet ip link set up1 up
        in_inet ip route add default via 192.0.2.1

        local dns_common=(--no-daemon --no-resolv --no-hosts --bind-interfaces -u root --log-queries
                --local-ttl=2 --address=/allowed.test/192.0.2.10 --address=/other.test/192.0.2.11
                --address=/b.wild.test/192.0.2.13 --address=/port.test/192.0.2.14 --address=/rebind10.test/10.99.0.5
                --address=/rebind127.test/127.0.0.1 --address=/rebindmeta.test/169.254.169.254
                --address=/private.test/10.99.0.5 --host-record=target.test,192.0.2.12
                --cname=alias.test,target.test --txt-record=allowed.test,hello)
        (exec nsenter -t "$inet" -n dnsmasq "${dns_common[@]}" --listen-address=192.0.2.53 \
                --log-facility="$dir/up.log") 2>/dev/null &
        pids+=($!)
        (exec nsenter -t "$inet" -n dnsmasq "${dns_common[@]}" --listen-address=198.51.100.53 \
                --log-facility="$dir/foreign.log") 2>/dev/null &
        pids+=($!)
        mkdir -p "$dir/www" && echo hello-internet >"$dir/www/hello"
        (cd "$dir/www" && exec nsenter -t "$inet" -n python3 -m http.server 8080 --bind 0.0.0.0) \
                >/dev/null 2>&1 &
        pids+=($!)
        (cd "$dir/www" && exec nsenter -t "$inet" -n python3 -m http.server 443 --bind 0.0.0.0) \
                >/dev/null 2>&1 &
        pids+=($!)
        for _ in $(seq 50); do
                in_inet dig +short +time=1 +tries=1 @192.0.2.53 allowed.test 2>/dev/null | grep -q . &&
                        curl -s -m 1 http://192.0.2.10:8080/hello >/dev/null && break
                sleep 0.1
        done
}
