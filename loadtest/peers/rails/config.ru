# The Rails ActionCable peer of agora's load tests: served by puma (run.sh).
require_relative "config/environment"
run Rails.application
