module ApplicationCable
  # No authentication: the peer, like the baseline, measures broadcasting only.
  class Connection < ActionCable::Connection::Base
  end
end
