# bench/annotate.awk — appends its target and ok|MISS to every line of `make bench` that
# bench/targets names; other lines pass through unchanged. Lines that already state a target
# (the gs4d and rig benchmarks print their own) are left alone.
#   awk -f bench/annotate.awk bench/targets -   (targets file, then the bench output)
function num(s) { gsub(/[^0-9.eE+-]/, "", s); return s + 0 }
function verdict(v, t) { return (v == v + 0 && v <= t) ? "ok" : "MISS" }
function find(kind, name,   i) {
    for (i = 1; i <= nt; i++)
        if (tk[i] == kind && (tc[i] == name || (tc[i] ~ /\*$/ && index(name, substr(tc[i], 1, length(tc[i]) - 1)) == 1)))
            return i
    return 0
}
FNR == NR { if ($0 !~ /^#/ && NF >= 3) { nt++; tk[nt] = $1; tc[nt] = $2; tv[nt] = $3 } next }
{
    i = find($1, $2)
    if (!i || $0 ~ /target/ || ($3 != "nan" && $3 !~ /^[0-9.eE+-]+$/ && $1 != "mem")) { print; next } # table headers
    if ($1 == "loaded") {
        split(tv[i], t, ",")
        if ($5 == "nan") { print $0 "  target <= " t[1] " and <= " t[2] "x 1 thread: no figure"; next }
        printf "%s  target <= %s: %s; <= %sx 1 thread: %s\n", $0, t[1], verdict($5, t[1]), t[2], verdict($7, t[2])
    } else if ($1 == "mem") {
        # mem <case> anima <MiB> MiB (+<MiB>) torch <MiB> MiB (+<MiB>)
        a = num($4); b = num($8)
        if (b > 0) printf "%s  peak %.2fx torch, target <= %s: %s\n", $0, a / b, tv[i], verdict(a / b, tv[i])
        else print $0 "  target <= " tv[i] "x torch: no figure"
    } else {
        v = $3
        if (v == "nan") { print $0 "  target <= " tv[i] ": no figure"; next }
        printf "%s  target <= %s: %s\n", $0, tv[i], verdict(num(v), tv[i])
    }
}
