// `talkbox serve --zeroconf [NAME]` against a real Avahi: each test starts its own D-Bus system bus
// (a permissive policy, its socket in the test's temporary folder) and, on it, its own avahi-daemon
// in a network and mount namespace of its own: the daemon sees only that namespace's loopback
// (avahi takes lo although it has no MULTICAST flag), so nothing reaches the real network and
// daemons of tests running in parallel neither meet (both would claim 127.0.0.1's reverse name)
// nor share the pid file in their private /run. The server and avahi-browse reach the daemon over
// the bus's socket, a file, from outside its namespace. What is announced is read back with
// avahi-browse.
#include <gtest/gtest.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "server/serve_process.h"
#include "server/wyoming_client.h"
#include "server/zeroconf.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox::testing;

namespace {

// A daemon this test started, stopped (SIGTERM, then SIGKILL) when it goes out of scope, so a
// failing test leaves none behind. `ready` is a line it writes to `log` once it serves.
class Daemon {
public:
    Daemon(const std::vector<std::string>& argv, const std::string& out, const std::string& log, const std::string& ready)
        : log_(log) {
        pid_ = spawn_process(argv, out, log, "cannot start " + argv[0]);
        if (!eventually(10, [&] { return read_text(log_).find(ready) != std::string::npos || exited(); }) || exited()) {
            const std::string what = argv[0] + " did not start:\n" + read_text(log_);
            stop();
            throw std::runtime_error(what);
        }
    }
    ~Daemon() { stop(); }
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    void stop() {
        if (pid_ <= 0) return;
        kill(pid_, SIGTERM);
        if (!eventually(5, [&] { return exited(); })) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        pid_ = -1;
    }

private:
    bool exited() { return pid_ <= 0 || waitpid(pid_, nullptr, WNOHANG) == pid_ ? (pid_ = -1, true) : false; }

    std::string log_;
    pid_t pid_ = -1;
};

// A D-Bus system bus of the test's own; DBUS_SYSTEM_BUS_ADDRESS names it for every process the test
// starts after it (avahi-daemon, talkbox serve, avahi-browse).
class PrivateBus {
public:
    explicit PrivateBus(const TempDir& dir) {
        write_text(dir.file("bus.conf"), R"(<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=)" + dir.file("bus") + R"(</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
)");
        daemon_ = std::make_unique<Daemon>(
            std::vector<std::string>{"dbus-daemon", "--config-file=" + dir.file("bus.conf"), "--nofork", "--nopidfile", "--print-address"},
            dir.file("bus.address"), dir.file("bus.log"), "");
        std::string address;
        if (!eventually(10, [&] { return (address = read_text(dir.file("bus.address"))).find('\n') != std::string::npos; }))
            throw std::runtime_error("dbus-daemon printed no address:\n" + read_text(dir.file("bus.log")));
        setenv("DBUS_SYSTEM_BUS_ADDRESS", address.substr(0, address.find('\n')).c_str(), 1);
    }
    ~PrivateBus() { unsetenv("DBUS_SYSTEM_BUS_ADDRESS"); }

private:
    std::unique_ptr<Daemon> daemon_;
};

// avahi-daemon on the private bus, alone in its namespaces (above).
std::unique_ptr<Daemon> start_avahi(const TempDir& dir) {
    write_text(dir.file("avahi.conf"), "[server]\nhost-name=talkbox-test\nuse-ipv4=yes\nuse-ipv6=no\nenable-dbus=yes\n"
                                       "[wide-area]\nenable-wide-area=no\n[publish]\npublish-hinfo=no\npublish-workstation=no\n");
    // unshare execs sh, which execs the daemon: one pid, SIGTERM reaches avahi-daemon itself.
    const std::string run = "ip link set lo up && mount -t tmpfs tmpfs /run && "
                            "exec avahi-daemon --no-drop-root --no-chroot --no-rlimits --no-proc-title -f " + dir.file("avahi.conf");
    return std::make_unique<Daemon>(std::vector<std::string>{"unshare", "--mount", "--net", "sh", "-c", run}, dir.file("avahi.log"),
                                    dir.file("avahi.log"), "Server startup complete");
}

// avahi-browse -p escapes a name's bytes as \DDD (decimal) and '\' '.' as "\\" "\.".
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() + 1 && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 3)));
            i += 3;
        } else if (s[i] == '\\' && i + 1 < s.size()) {
            out += s[++i];
        } else {
            out += s[i];
        }
    }
    return out;
}

// The _wyoming._tcp services the daemon knows and resolves now, name → port: avahi-browse's
// resolved ("=") lines, minus the ones a later "-" line removed.
std::map<std::string, int> wyoming_services() {
    const CommandResult r = run_command("avahi-browse --resolve --parsable --terminate --no-db-lookup _wyoming._tcp", 10);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::map<std::string, int> services;
    size_t at = 0;
    while (at < r.out.size()) {
        const size_t end = r.out.find('\n', at);
        const std::string line = r.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
        at = end == std::string::npos ? r.out.size() : end + 1;
        std::vector<std::string> f;
        for (size_t s = 0, e; s <= line.size(); s = e + 1) {
            e = line.find(';', s);
            if (e == std::string::npos) e = line.size();
            f.push_back(line.substr(s, e - s));
        }
        // =;iface;proto;name;type;domain;host;address;port;txt   -;iface;proto;name;type;domain
        if (f.size() >= 10 && f[0] == "=") services[unescape(f[3])] = std::stoi(f[8]);
        if (f.size() >= 6 && f[0] == "-") services.erase(unescape(f[3]));
    }
    return services;
}

// Whether the daemon resolves `name` to `port` within 10 s; whether it stopped knowing `name` within 10 s.
bool announced(const std::string& name, int port) {
    return eventually(10, [&] {
        const auto s = wyoming_services();
        const auto it = s.find(name);
        return it != s.end() && it->second == port;
    });
}
bool withdrawn(const std::string& name) {
    return eventually(10, [&] { return wyoming_services().count(name) == 0; });
}

std::vector<std::string> serve_args(const std::vector<std::string>& zeroconf) {
    std::vector<std::string> args = {"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--wyoming-port", "0", "--no-http", "-T", "1"};
    args.insert(args.end(), zeroconf.begin(), zeroconf.end());
    return args;
}

void expect_describe_answers(int wyoming_port) {
    WyomingClient c(wyoming_port);
    ASSERT_TRUE(c.send("describe"));
    const auto e = c.read(30);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, "info");
    EXPECT_EQ(e->data["tts"][0]["name"], "talkbox") << e->data.dump();
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(Zeroconf, AnnouncesTheWyomingPortUnderItsNameUntilTheServerStops) {
    TempDir dir;
    PrivateBus bus(dir);
    auto avahi = start_avahi(dir);
    const std::string name = "talkbox test";  // a space: names are free text
    ServeProcess server(serve_args({"--zeroconf", name}));
    ASSERT_TRUE(log_has(server, "talkbox: zeroconf: announced '" + name + "' (_wyoming._tcp) on port " + std::to_string(server.wyoming_port())))
        << server.log();
    // ServeProcess listens on 127.0.0.1, which no other machine reaches.
    EXPECT_NE(server.log().find("talkbox: warning: --zeroconf announces this machine's network addresses, but --host 127.0.0.1 accepts "
                                "connections from this machine only"),
              std::string::npos)
        << server.log();
    EXPECT_TRUE(announced(name, server.wyoming_port()));
    EXPECT_EQ(server.stop(), 0) << server.log();
    EXPECT_TRUE(withdrawn(name));
}

TEST(Zeroconf, ATakenNameGetsAvahisAlternativeAndAKilledServerIsWithdrawn) {
    TempDir dir;
    PrivateBus bus(dir);
    auto avahi = start_avahi(dir);
    const std::string name = "talkbox";
    ServeProcess first(serve_args({"--zeroconf", name}));
    ASSERT_TRUE(log_has(first, "announced '" + name + "'")) << first.log();
    ServeProcess second(serve_args({"--zeroconf", name}));
    ASSERT_TRUE(log_has(second, "talkbox: zeroconf: '" + name + "' is taken; announcing '" + name + " #2'")) << second.log();
    ASSERT_TRUE(log_has(second, "announced '" + name + " #2'")) << second.log();
    EXPECT_TRUE(announced(name, first.wyoming_port()));
    EXPECT_TRUE(announced(name + " #2", second.wyoming_port()));
    // A server killed outright is withdrawn by the daemon once its bus connection drops; the other stays.
    first.signal(SIGKILL);
    EXPECT_TRUE(withdrawn(name));
    EXPECT_TRUE(announced(name + " #2", second.wyoming_port()));
}

// AVAHI_CLIENT_NO_FAIL: a server started before the daemon announces itself once it runs, and
// again after the daemon restarted.
TEST(Zeroconf, FollowsADaemonThatStartsLateAndRestarts) {
    TempDir dir;
    PrivateBus bus(dir);
    const std::string name = "talkbox-late";
    ServeProcess server(serve_args({"--zeroconf", name}));
    ASSERT_TRUE(log_has(server, "talkbox: warning: zeroconf is off until an Avahi daemon runs")) << server.log();
    expect_describe_answers(server.wyoming_port());
    auto avahi = start_avahi(dir);
    ASSERT_TRUE(log_has(server, "announced '" + name + "'")) << server.log();
    EXPECT_TRUE(announced(name, server.wyoming_port()));

    avahi.reset();
    ASSERT_TRUE(log_has(server, "the Avahi daemon went away")) << server.log();
    avahi = start_avahi(dir);
    EXPECT_TRUE(announced(name, server.wyoming_port())) << server.log();
    EXPECT_EQ(count(server.log(), "announced '" + name + "'"), 2u) << server.log();
    EXPECT_EQ(count(server.log(), "zeroconf is off"), 1u) << server.log();  // the daemon's absence, said once
}

TEST(Zeroconf, WithoutASystemBusTheServerWarnsOnceAndServes) {
    TempDir dir;
    setenv("DBUS_SYSTEM_BUS_ADDRESS", ("unix:path=" + dir.file("no-bus")).c_str(), 1);
    ServeProcess server(serve_args({"--zeroconf"}));
    unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
    ASSERT_TRUE(log_has(server, "talkbox: warning: zeroconf is off: cannot reach Avahi over the D-Bus system bus at unix:path=" +
                                    dir.file("no-bus") + " ("))
        << server.log();
    expect_describe_answers(server.wyoming_port());
    const std::string log = server.log();
    EXPECT_EQ(count(log, "zeroconf is off"), 1u) << log;
    EXPECT_NE(log.find("Home Assistant will not discover this server"), std::string::npos) << log;
    EXPECT_EQ(server.stop(), 0) << server.log();
}

// withdraw() itself (serve calls it when it starts draining): the service leaves the network while
// the process that announced it is still connected to the bus.
TEST(Zeroconf, WithdrawRemovesTheServiceAtOnce) {
    TempDir dir;
    PrivateBus bus(dir);
    auto avahi = start_avahi(dir);
    const std::string name = "talkbox-withdraw";
    std::vector<std::string> lines;
    std::mutex m;
    talkbox::server::ZeroconfAnnouncement a(name, 10200, [&](const std::string& line) {
        std::lock_guard<std::mutex> lock(m);
        lines.push_back(line);
    });
    EXPECT_TRUE(announced(name, 10200));
    a.withdraw();
    a.withdraw();  // idempotent
    EXPECT_TRUE(withdrawn(name));
    std::lock_guard<std::mutex> lock(m);
    EXPECT_EQ(lines, std::vector<std::string>{"talkbox: zeroconf: announced '" + name + "' (_wyoming._tcp) on port 10200"});
}

TEST(Zeroconf, RefusesBadUse) {
    const auto refused = [](const std::string& args, const std::string& message) {
        const CommandResult r = run_command(std::string(TALKBOX_BINARY) + " serve -m " + converted_fixture("tiny-0.6B-CustomVoice") + " " + args, 60);
        EXPECT_NE(r.exit_code, 0) << args;
        EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
    };
    refused("--zeroconf", "--zeroconf needs --wyoming-port (it announces the Wyoming port)");
    refused("--wyoming-port 0 --zeroconf ''", "--zeroconf name is empty (leave it out for the default, talkbox-");
    refused("--wyoming-port 0 --zeroconf " + std::string(64, 'a'), "is 64 bytes; a DNS-SD name has at most 63");
    refused("--wyoming-port 0 --zeroconf \"$(printf 'a\\tb')\"", "holds a control character");
    refused("--wyoming-port 0 --zeroconf \"$(printf '\\377')\"", "is not valid UTF-8");
    EXPECT_THROW(talkbox::server::check_zeroconf_name(std::string(64, 'x')), talkbox::Error);
    EXPECT_NO_THROW(talkbox::server::check_zeroconf_name(std::string(63, 'x')));
    EXPECT_NO_THROW(talkbox::server::check_zeroconf_name("Küche talkbox #1"));
}

TEST(Zeroconf, DefaultNameIsTalkboxAndTheHostName) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::string label = std::string(host).substr(0, std::string(host).find('.'));
    EXPECT_EQ(talkbox::server::default_zeroconf_name(), ("talkbox-" + label).substr(0, 63));
    EXPECT_NO_THROW(talkbox::server::check_zeroconf_name(talkbox::server::default_zeroconf_name()));
}

}  // namespace
