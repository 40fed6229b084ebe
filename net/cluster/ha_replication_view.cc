// HaReplicationView (net/cluster/ha_replication_view.h).

#include "net/cluster/ha_replication_view.h"

namespace uringmq::net {

ReplicationState HaReplicationView::replication_state() const {
  ReplicationState state;
  state.role = role_;
  if (server_) {
    for (uint32_t i = 0; i < server_->broker_count(); i++) {
      state.masters.push_back(
          {server_->name(i), server_->slaves(i), server_->acked(i), server_->lag_us(i)});
    }
  }
  if (client_) {
    for (uint32_t i = 0; i < client_->broker_count(); i++) {
      state.slaves.push_back({client_->name(i), client_->master_address(i),
                              client_->reported_offset(i), client_->bytes_replicated(i)});
    }
  }
  return state;
}

}  // namespace uringmq::net
