#!/bin/bash
# A PRIVATE RabbitMQ with channel_max = 1 and frame_max = 8192: the driver
# has one channel only, so its exchange checks share the publishing channel
# (a second channel was refused: a reconnect loop, nothing published), and
# its frames are 8 KB. Among 1,002 events to an exchange: one to a missing
# exchange fails NOT_FOUND (the check closes the only channel, which is
# opened again: no reconnect), one with 10 KB of headers is refused with the
# negotiated frame_max of 8192; the 1,000 are delivered, in order.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
# the broker's files made here, with the limits (services.sh keeps an existing directory)
R=/tmp/obx-rmqfault-$$/rabbitmq
mkdir -p "$R/log" "$R/mnesia"
: >"$R/rabbitmq-env.conf"
echo '[].' >"$R/enabled_plugins"
printf 'log.console = false\nlog.file.level = info\nchannel_max = 1\nframe_max = 8192\n' >"$R/rabbitmq.conf"
chmod 755 /tmp/obx-rmqfault-$$
chown -R rabbitmq:rabbitmq "$R"
priv_start
Q=$(rmq_queue chanmax)
X=obx_chanmax_x
"$RCONSUME" "$PRIV_URL" declare "$Q" "$X" "orders.#"

harness url="$PRIV_URL" -- publish 1002 7 "$X/orders.created" --bad-dest 300 obx_no_such_exchange/x \
    --big-header 600 10000 --deadline 30 >"$WORK/out" 2>"$WORK/err" \
    || { cat "$WORK/out"; tail -5 "$WORK/err"; echo "reconnects: $(grep -c reconnecting "$WORK/err")";
         fail "harness failed"; }
cat "$WORK/out"
sum=$(tail -1 "$WORK/out")
expect_eq ok "$(field ok "$sum")" 1000
expect_eq permanent "$(field permanent "$sum")" 2
grep -q "permanent n=300 status=2 detail=NOT_FOUND - no exchange 'obx_no_such_exchange'" "$WORK/out" \
    || fail "no NOT_FOUND for the missing exchange"
grep -Eq "permanent n=600 status=2 detail=headers too large: .* over the 8172 bytes one frame holds with the broker's frame_max of 8192" "$WORK/out" \
    || fail "the 10 KB headers were not refused with the negotiated frame_max"
! grep -q "reconnecting" "$WORK/err" || { grep reconnecting "$WORK/err" | head -3; fail "the connection was lost"; }
expect_eq "connections" "$(grep -c 'connected to' "$WORK/err")" 1

r=$("$RCONSUME" "$PRIV_URL" read "$Q" 1000 5000 --header-n trace t- --content-type application/json) \
    || { echo "$r"; fail "consumer check failed"; }
echo "$r"
echo "PASS channel_max 1 ($(($(field received "$r") - $(field unique "$r"))) extra messages)"
