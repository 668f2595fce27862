// Whether the client of a request is still connected. cpp-httplib (0.11) does not hand its socket
// to handlers, so the socket is found once by its address pair and then polled for a hang-up.
#pragma once

#include <string>

namespace talkbox::server {

class ConnectionWatch {
public:
    // The connected socket whose local/remote ports are these (on 127.0.0.1 or any address).
    ConnectionWatch(int local_port, int remote_port, const std::string& remote_addr);
    // True once the peer has closed or reset the connection (never true when the socket was not
    // found: the write path still notices).
    bool closed() const;

private:
    int fd_ = -1;
};

}  // namespace talkbox::server
