#include "server/zeroconf.h"

#include <avahi-client/client.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/domain.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/thread-watch.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>

#include "talkbox/error.h"

namespace talkbox::server {

namespace {

constexpr size_t kMaxNameBytes = AVAHI_LABEL_MAX - 1;  // one DNS label

// Where libavahi-client looks for the system bus, for the warning that it is out of reach.
std::string system_bus_address() {
    const char* env = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
    return env && *env ? env : "unix:path=/run/dbus/system_bus_socket";
}

}  // namespace

std::string default_zeroconf_name() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string label(host);
    label = label.substr(0, label.find('.'));
    std::string name = label.empty() ? "talkbox" : "talkbox-" + label;
    if (name.size() > kMaxNameBytes) name.resize(kMaxNameBytes);
    return name;
}

void check_zeroconf_name(const std::string& name) {
    const auto refuse = [&](const std::string& why) {
        throw Error(ErrorKind::InvalidArgument, "--zeroconf name '" + name + "' " + why);
    };
    if (name.empty()) throw Error(ErrorKind::InvalidArgument, "--zeroconf name is empty (leave it out for the default, " + default_zeroconf_name() + ")");
    if (name.size() > kMaxNameBytes) refuse("is " + std::to_string(name.size()) + " bytes; a DNS-SD name has at most " + std::to_string(kMaxNameBytes));
    for (unsigned char c : name) {
        if (c < 0x20 || c == 0x7F) refuse("holds a control character (RFC 6763 forbids them in names)");
    }
    // D-Bus carries only well-formed UTF-8; nlohmann's dump() is the validator at hand (it throws on anything else).
    try {
        (void)nlohmann::json(name).dump();
    } catch (const nlohmann::json::type_error&) {
        refuse("is not valid UTF-8");
    }
}

// Everything below runs on Avahi's thread (the callbacks), or with it stopped (construction,
// withdraw), so the state needs no lock of its own.
struct ZeroconfAnnouncement::Impl {
    std::string name;  // the one announced: NAME, or Avahi's alternative after a collision
    uint16_t port;
    Log log;
    AvahiThreadedPoll* poll = nullptr;
    AvahiClient* client = nullptr;
    AvahiEntryGroup* group = nullptr;  // owned by `client`
    bool reconnecting = false;  // the daemon went away (said once, not again while it is gone)
    std::mutex withdraw_mutex;
    bool withdrawn = false;

    Impl(std::string n, int p, Log l) : name(std::move(n)), port(static_cast<uint16_t>(p)), log(std::move(l)) {}

    void warn_off(const std::string& why) {
        log("talkbox: warning: zeroconf is off: " + why + "; Home Assistant will not discover this server (add it by host and port)");
    }

    // With AVAHI_CLIENT_NO_FAIL the client also outlives a daemon that is not running yet: it waits
    // for it (CONNECTING); it fails at once only when the system bus itself is out of reach.
    bool connect() {
        int error = 0;
        client = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, on_client, this, &error);
        if (!client) warn_off("cannot reach Avahi over the D-Bus system bus at " + system_bus_address() + " (" + avahi_strerror(error) + ")");
        return client != nullptr;
    }

    static void on_client(AvahiClient* c, AvahiClientState state, void* self) { static_cast<Impl*>(self)->client_changed(c, state); }
    static void on_group(AvahiEntryGroup* g, AvahiEntryGroupState state, void* self) { static_cast<Impl*>(self)->group_changed(g, state); }

    void client_changed(AvahiClient* c, AvahiClientState state) {
        client = c;  // also called from inside avahi_client_new, before it returns
        switch (state) {
        case AVAHI_CLIENT_S_RUNNING:
            reconnecting = false;
            announce();
            break;
        case AVAHI_CLIENT_S_COLLISION:    // the daemon's host name is taken: it picks another and
        case AVAHI_CLIENT_S_REGISTERING:  // registers it; the service follows once it runs again
            if (group) avahi_entry_group_reset(group);
            break;
        case AVAHI_CLIENT_CONNECTING:
            if (reconnecting) break;
            log("talkbox: warning: zeroconf is off until an Avahi daemon runs: none on the D-Bus system bus at " + system_bus_address() +
                "; '" + name + "' is announced once avahi-daemon starts");
            break;
        case AVAHI_CLIENT_FAILURE:
            if (avahi_client_errno(c) == AVAHI_ERR_DISCONNECTED) {
                // The daemon stopped or restarted: a new client (the old one frees the group) waits for it.
                log("talkbox: zeroconf: the Avahi daemon went away; announcing '" + name + "' again once it is back");
                reconnecting = true;
                group = nullptr;
                avahi_client_free(c);
                client = nullptr;
                connect();
            } else {
                warn_off(std::string("the Avahi client failed (") + avahi_strerror(avahi_client_errno(c)) + ")");
            }
            break;
        }
    }

    void group_changed(AvahiEntryGroup* g, AvahiEntryGroupState state) {
        switch (state) {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            log("talkbox: zeroconf: announced '" + name + "' (" + kWyomingServiceType + ") on port " + std::to_string(port));
            break;
        case AVAHI_ENTRY_GROUP_COLLISION:  // another host announces NAME: take the next free one
            rename();
            avahi_entry_group_reset(g);
            announce();
            break;
        case AVAHI_ENTRY_GROUP_FAILURE:
            warn_off(std::string("Avahi could not announce '") + name + "' (" + avahi_strerror(avahi_client_errno(avahi_entry_group_get_client(g))) + ")");
            break;
        case AVAHI_ENTRY_GROUP_UNCOMMITED:
        case AVAHI_ENTRY_GROUP_REGISTERING:
            break;
        }
    }

    // "talkbox" → "talkbox #2" → "talkbox #3" ...
    void rename() {
        char* next = avahi_alternative_service_name(name.c_str());
        log("talkbox: zeroconf: '" + name + "' is taken; announcing '" + next + "'");
        name = next;
        avahi_free(next);
    }

    // Adds the service to the (new or reset) entry group and commits it.
    void announce() {
        if (!group && !(group = avahi_entry_group_new(client, on_group, this))) {
            warn_off(std::string("Avahi refused an entry group (") + avahi_strerror(avahi_client_errno(client)) + ")");
            return;
        }
        if (!avahi_entry_group_is_empty(group)) return;  // already announced (the client ran again)
        for (;;) {
            const int rc = avahi_entry_group_add_service(group, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), name.c_str(),
                                                         kWyomingServiceType, nullptr, nullptr, port, nullptr);
            if (rc == AVAHI_ERR_COLLISION) {  // another service of this machine has NAME
                rename();
                continue;
            }
            if (rc < 0) return warn_off(std::string("Avahi refused the service (") + avahi_strerror(rc) + ")");
            break;
        }
        if (const int rc = avahi_entry_group_commit(group); rc < 0) warn_off(std::string("Avahi refused to announce it (") + avahi_strerror(rc) + ")");
    }
};

ZeroconfAnnouncement::ZeroconfAnnouncement(const std::string& name, int port, Log log) {
    check_zeroconf_name(name);
    impl_ = std::make_unique<Impl>(name, port, std::move(log));
    if (!(impl_->poll = avahi_threaded_poll_new())) throw Error(ErrorKind::Io, "zeroconf: cannot create Avahi's event loop");
    // The client is made before its thread runs, so its first callbacks need no lock.
    if (impl_->connect()) avahi_threaded_poll_start(impl_->poll);
}

ZeroconfAnnouncement::~ZeroconfAnnouncement() { withdraw(); }

void ZeroconfAnnouncement::withdraw() {
    std::lock_guard<std::mutex> lock(impl_->withdraw_mutex);
    if (impl_->withdrawn) return;
    impl_->withdrawn = true;
    avahi_threaded_poll_stop(impl_->poll);  // joins Avahi's thread: no callback runs past this
    // Freeing the client frees its entry group, which the daemon withdraws from the network.
    if (impl_->client) avahi_client_free(impl_->client);
    impl_->client = nullptr;
    impl_->group = nullptr;
    avahi_threaded_poll_free(impl_->poll);
    impl_->poll = nullptr;
}

}  // namespace talkbox::server
