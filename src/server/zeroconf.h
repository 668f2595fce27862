// `talkbox serve --zeroconf [NAME]`: announces the Wyoming port over mDNS / DNS-SD as a
// `_wyoming._tcp` service, the type Home Assistant's Wyoming integration discovers (as
// wyoming-piper and the other rhasspy servers announce it: a name and the port, no TXT records),
// through the Avahi daemon on the D-Bus system bus (libavahi-client). The announcement lives on
// Avahi's own thread: it survives the daemon restarting, takes another name when NAME is taken on
// the network, and never stops the server from serving: what happens is reported through `log`.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace talkbox::server {

inline constexpr const char* kWyomingServiceType = "_wyoming._tcp";

// NAME when --zeroconf is given without one: "talkbox-" and this machine's host name (its first
// label), cut to the 63 bytes a DNS-SD instance name may have.
std::string default_zeroconf_name();

// Throws talkbox::Error (InvalidArgument) when `name` cannot be a DNS-SD instance name.
void check_zeroconf_name(const std::string& name);

class ZeroconfAnnouncement {
public:
    using Log = std::function<void(const std::string&)>;  // one line, called from Avahi's thread too
    // Starts announcing `name` (checked as above) for `port`; throws only for a bad name. Without a
    // reachable Avahi daemon it logs one warning and waits for the daemon (or gives up when even
    // the system bus is out of reach).
    ZeroconfAnnouncement(const std::string& name, int port, Log log);
    ~ZeroconfAnnouncement();  // withdraw()
    ZeroconfAnnouncement(const ZeroconfAnnouncement&) = delete;
    ZeroconfAnnouncement& operator=(const ZeroconfAnnouncement&) = delete;

    // Removes the service from the network (a draining or stopping server is no longer offered)
    // and stops following the daemon. Idempotent; safe from any thread but Avahi's.
    void withdraw();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace talkbox::server
