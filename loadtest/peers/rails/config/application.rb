# A minimal Rails app: ActionCable and one controller, no database, no asset pipeline, no views.
require "rails"
require "action_controller/railtie"
require "action_cable/engine"

module Peer
  class Application < Rails::Application
    config.load_defaults 6.1
    config.api_only = true
    config.eager_load = true
    config.cache_classes = true
    config.consider_all_requests_local = false
    config.secret_key_base = ENV.fetch("SECRET_KEY_BASE", "agora-loadtest-peer-not-a-secret")
    # Logging every frame would measure the logger: warnings only, to stderr.
    config.log_level = :warn
    config.logger = ActiveSupport::Logger.new($stderr)
    config.hosts.clear
    # The load generator is not a browser: no Origin check.
    config.action_cable.disable_request_forgery_protection = true
    config.action_cable.mount_path = "/cable"
    # ActionCable's own worker pool (default 4 threads).
    config.action_cable.worker_pool_size = Integer(ENV.fetch("PEER_CABLE_WORKERS", "4"))
  end
end
