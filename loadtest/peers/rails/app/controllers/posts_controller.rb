class PostsController < ActionController::API
  # POST /post {"body": "...", "id": N}
  def create
    body = params.require(:body)
    ActionCable.server.broadcast(
      "events",
      { kind: "message.created", message: { id: params[:id].to_s, body: body } }
    )
    head :created
  end

  def up
    render json: { ok: true }
  end
end
